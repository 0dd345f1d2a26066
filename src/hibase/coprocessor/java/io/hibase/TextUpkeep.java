// A write's upkeep of full-text indexes (Specs.Spec.text): a row has one entry per distinct
// token of its text (Tokens), so a write compares the row's token sets before and after it:
// each token in either set is one entry's change, planned by BatchUpkeep.entry as any
// index's single entry is (phase 1 unverified marks, counts begun; phase 3 from the row as
// HBase reads it after the write: Now).
package io.hibase;

import static io.hibase.RowState.*;
import static io.hibase.Specs.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Row;

final class TextUpkeep {
  private TextUpkeep() {}

  /** BatchUpkeep.change for a text index: a plan per token of the row before or after the
   *  write (old key: the token was there; new key: it is predicted to be), and one with
   *  neither (textKey the bare alias), so phase 3 looks at the row even when it had and is
   *  predicted to have no token. */
  static void change(BatchUpkeep u, Catalog cat, Spec s, byte[] row, State before,
                     State after, long ts, Map<TableName, List<Row>> phase1,
                     List<BatchUpkeep.Plan> plans, Map<TableName, Map<ByteBuffer, long[]>> deltas)
      throws IOException {
    Set<ByteBuffer> old = Tokens.keys(s, before);
    Set<ByteBuffer> now = Tokens.keys(s, after);
    Set<ByteBuffer> all = new LinkedHashSet<>(old);
    all.addAll(now);
    for (ByteBuffer k : all) {
      byte[] key = k.array();
      BatchUpkeep.Plan pl = u.entry(cat, s, row, before, after, old.contains(k) ? key : null,
          now.contains(k) ? key : null, ts, phase1, plans, deltas);
      pl.textKey = key;
    }
    u.entry(cat, s, row, before, after, null, null, ts, phase1, plans, deltas).textKey =
        s.alias;
  }

  /** Phase 3's view of text rows as HBase reads them after the write: each plan's token
   *  entry is there when the row now has that token (key); tokens the row has that no plan
   *  predicted (an append to the text, say) get their entries and counts (unplanned). */
  static final class Now {
    private static final class Seen {
      final byte[] user;  // the entries' rowkey (Salt: the user's)
      final TableName idx;
      final Set<ByteBuffer> actual;
      final Set<ByteBuffer> planned = new HashSet<>();

      Seen(byte[] user, TableName idx, Set<ByteBuffer> actual) {
        this.user = user;
        this.idx = idx;
        this.actual = actual;
      }
    }

    private final Map<Spec, Map<ByteBuffer, Seen>> seen = new IdentityHashMap<>();
    private final Catalog cat;

    Now(Catalog cat) {
      this.cat = cat;
    }

    /** The plan's token entry's value key if the row (st, as read now) has the token. */
    byte[] key(BatchUpkeep.Plan pl, State st) {
      Seen x = seen.computeIfAbsent(pl.spec, k -> new HashMap<>()).computeIfAbsent(
          ByteBuffer.wrap(pl.row), k -> new Seen(cat.user(pl.row), pl.idx, Tokens.keys(pl.spec, st)));
      ByteBuffer k = ByteBuffer.wrap(pl.textKey);
      x.planned.add(k);
      return x.actual.contains(k) ? pl.textKey : null;
    }

    /** The entries (verified) and landed counts of tokens the rows have that no plan had. */
    void unplanned(long ts, Map<TableName, List<Row>> out,
                   Map<TableName, Map<ByteBuffer, long[]>> landed) {
      byte[] verified = cat(new byte[] {ObserverCore.VERIFIED},
          HibaseCodec.packList(Collections.emptyList()));
      for (Map<ByteBuffer, Seen> rows : seen.values()) {
        for (Seen x : rows.values()) {
          for (ByteBuffer k : x.actual) {
            if (x.planned.contains(k)) continue;
            ObserverCore.add(out, x.idx, new Put(RowState.cat(k.array(), x.user))
                .addColumn(ObserverCore.V, ObserverCore.V, ts, verified));
            CountCells.deltas(landed, x.idx, new byte[0], null, false, k.array());
          }
        }
      }
    }
  }
}
