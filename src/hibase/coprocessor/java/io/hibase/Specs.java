// The index definitions hibase_meta holds, parsed: which indexes of a table the
// coprocessor keeps (those whose definition says "upkeep": "server"), their columns and types.
package io.hibase;

import static io.hibase.RowState.*;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hbase.thirdparty.com.google.gson.JsonArray;
import org.apache.hbase.thirdparty.com.google.gson.JsonElement;
import org.apache.hbase.thirdparty.com.google.gson.JsonObject;
import org.apache.hbase.thirdparty.com.google.gson.JsonParser;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

final class Specs {
  private static final Logger LOG = LoggerFactory.getLogger(IndexObserver.class);
  private Specs() {}

  // -- the catalog: index definitions from hibase_meta ----------------------------------------

  static final class Spec {
    String name;
    byte[] alias, nullAlias;
    byte[][] columns, covering;
    HibaseCodec.Type[] types;
    boolean local, building;
    boolean eventual;  // "consistency": "eventual": changed rows recorded, applied later
    boolean text;  // "kind": "text": a full-text index, an entry per token (Tokens)
    boolean uncovered;  // "uncovered": entries carry no values, written once (BatchUpkeep)
    IndexWhere where;  // a partial index's predicate (issue 43); null: every row
  }

  static final class Catalog {
    final TableName meta;
    final String table;   // hibase's name of the table
    final String prefix;  // the HBase name of hibase table X is prefix + X
    byte[] gen = new byte[0];
    long checkedAt;  // when gen was last read (0: never)
    List<Spec> specs = new ArrayList<>();
    byte[][] layout;  // local indexes: the recorded region starts (sorted)
    int saltBuckets;  // a salted table's buckets (Salt), 0: unsalted

    /** The user rowkey index entries carry of stored row `row` (Salt). */
    byte[] user(byte[] row) {
      return Salt.user(row, saltBuckets);
    }

    /** The stored row of user rowkey `row` an index entry carries (Salt). */
    byte[] stored(byte[] row) {
      return Salt.stored(row, saltBuckets);
    }

    Catalog(TableName meta, String table, String prefix) {
      this.meta = meta;
      this.table = table;
      this.prefix = prefix;
    }

    private final java.util.Map<String, TableName> kvNames =
        new java.util.concurrent.ConcurrentHashMap<>();

    /** The HBase table of key-value table `name` (e.g. "__idx__"), made once: TableName.valueOf
     *  checks and interns its string, which per index cell cost half a write batch's upkeep. */
    TableName kv(String name) {
      return kvNames.computeIfAbsent(name,
          n -> TableName.valueOf(prefix + "hibase_kv" + n + table));
    }
  }

  /** IndexSpec.to_json's fields; null unless the index is kept here (upkeep server) and not
   *  stale (a bulk load suspended it). */
  static Spec parse(byte[] raw) {
    JsonObject o = JsonParser.parseString(new String(raw, StandardCharsets.UTF_8))
        .getAsJsonObject();
    JsonElement up = o.get("upkeep");
    if (up == null || up.isJsonNull() || !up.getAsString().equals("server")) return null;
    String state = o.get("state").getAsString();
    if (state.equals("stale")) return null;
    Spec s = new Spec();
    s.name = o.get("name").getAsString();
    s.alias = HibaseCodec.unhex(o.get("alias").getAsString());
    JsonElement na = o.get("null_alias");
    s.nullAlias = na == null || na.isJsonNull() ? null : HibaseCodec.unhex(na.getAsString());
    s.columns = strings(o.getAsJsonArray("columns"));
    s.covering = strings(o.getAsJsonArray("covering"));
    JsonArray types = o.getAsJsonArray("types");
    s.types = new HibaseCodec.Type[types.size()];
    for (int i = 0; i < s.types.length; i++) {
      try {
        s.types[i] = HibaseCodec.Type.parse(types.get(i).getAsString());
      } catch (IllegalArgumentException e) {
        // a type this jar cannot key (a newer hibase made the index): keeping the index with
        // wrong or missing entries would give wrong answers, skipping it would leave it stale
        // unnoticed; so the table's writes fail (preBatchMutate: DoNotRetryIOException) until
        // the jar is updated or the index dropped
        LOG.error("hibase index {}: {}; writes refused", s.name, e.getMessage());
        throw new IllegalStateException("hibase index " + s.name + ": " + e.getMessage()
            + "; update the coprocessor jar (hibase cluster coprocessor)", e);
      }
    }
    s.local = o.get("local").getAsBoolean();
    s.building = state.equals("building");
    JsonElement consistency = o.get("consistency");
    s.eventual = consistency != null && !consistency.isJsonNull()
        && consistency.getAsString().equals("eventual");
    JsonElement kind = o.get("kind");
    s.text = kind != null && !kind.isJsonNull() && kind.getAsString().equals("text");
    if (kind != null && !kind.isJsonNull() && !s.text) {
      // an index kind this jar does not know: as an unknown type, writes are refused
      throw new IllegalStateException("hibase index " + s.name + ": unknown kind "
          + kind.getAsString() + "; update the coprocessor jar (hibase cluster coprocessor)");
    }
    JsonElement unc = o.get("uncovered");
    s.uncovered = unc != null && !unc.isJsonNull() && unc.getAsBoolean();
    JsonElement where = o.get("where");
    if (where != null && !where.isJsonNull()) s.where = IndexWhere.parse(where.getAsJsonObject());
    return s;
  }

  static byte[][] strings(JsonArray a) {
    byte[][] out = new byte[a.size()][];
    for (int i = 0; i < out.length; i++) out[i] = a.get(i).getAsString().getBytes(StandardCharsets.UTF_8);
    return out;
  }
}
