// A partial index's predicate (issue 43): IndexSpec.where, the pushed-scan condition format
// (src/hibase/query/pushdown.py) with its columns, evaluated by PushedScan's own code on a
// row's latest cells, as src/hibase/index/partial.py evaluates it in the clients. A row has an
// entry only when the predicate is TRUE (FALSE or UNKNOWN: none).
package io.hibase;

import java.nio.charset.StandardCharsets;

import org.apache.hbase.thirdparty.com.google.gson.JsonArray;
import org.apache.hbase.thirdparty.com.google.gson.JsonNull;
import org.apache.hbase.thirdparty.com.google.gson.JsonObject;

final class IndexWhere {
  final byte[][] columns;  // "family:qualifier" of each column the condition reads
  private final PushedScan scan;

  private IndexWhere(byte[][] columns, PushedScan scan) {
    this.columns = columns;
    this.scan = scan;
  }

  /** From the spec's "where": {"sql": text, "cols": [[hex name, type], ...], "where": tree}. */
  static IndexWhere parse(JsonObject w) {
    JsonArray cols = w.getAsJsonArray("cols");
    byte[][] names = new byte[cols.size()][];
    for (int i = 0; i < names.length; i++) {
      names[i] = HibaseCodec.unhex(cols.get(i).getAsJsonArray().get(0).getAsString());
    }
    JsonObject work = new JsonObject();
    work.addProperty("v", PushedScan.VERSION);
    work.addProperty("mode", "rows");
    work.addProperty("fam", HibaseCodec.hex("f".getBytes(StandardCharsets.UTF_8)));
    work.add("cols", cols);
    work.add("where", w.get("where"));
    work.add("out", JsonNull.INSTANCE);
    return new IndexWhere(names, PushedScan.parse(work.toString().getBytes(StandardCharsets.UTF_8)));
  }

  /** Is the condition TRUE on the row's latest cells? */
  boolean holds(RowState.State st) {
    byte[][] raw = new byte[columns.length][];
    for (int i = 0; i < raw.length; i++) raw[i] = st.latest(columns[i]);
    return scan.test(raw) == 1;
  }
}
