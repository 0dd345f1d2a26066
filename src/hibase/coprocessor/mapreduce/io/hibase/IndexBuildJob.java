// hibase's distributed index build: a map-only MapReduce job over a table's regions
// (TableMapReduceUtil / TableInputFormat: one map task per region; the LocalJobRunner when
// mapreduce.framework.name is local, YARN with a cluster's configuration). Started by
// `hibase index create|build ... --distributed` (src/hibase/index/distributed.py), which sets
// the index's state around the job and reads the report this writes.
//
// Two modes, by who keeps the index:
//   reindex  (the index is kept by IndexObserver, "upkeep": "server"): each map task sends
//            every row key of its region as a put carrying hibase.reindex, which the
//            coprocessor does not apply but answers by writing the row's entry and count from
//            the row as stored, under the row's lock, unless a write since the index became
//            `building` wrote it already; the build never races a writer (any client).
//   entries  (a client-kept index): each map task computes its rows' entries with HibaseCodec
//            (the Python build's bytes: alias | value key | rowkey -> 0x01 + msgpack(covered))
//            and writes them verified, then its value counts in a count cell of its own (c: +
//            8 random bytes; a count is the sum of its row's cells). Writers are kept out the
//            way the one-process build keeps them out (see distributed.py).
//
//   java -cp CONF:JARS io.hibase.IndexBuildJob [-D k=v ...] MODE SPEC.json DATA_TABLE
//        INDEX_TABLE REPORT.json
//
// DATA_TABLE and INDEX_TABLE are HBase names (store prefix included). The report (JSON):
// {"ok", "job", "seconds", "rows", "indexed", "tasks": [{"start", "rows", "indexed", "ms"}]}.
package io.hibase;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.filter.KeyOnlyFilter;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.hbase.mapreduce.TableMapReduceUtil;
import org.apache.hadoop.hbase.mapreduce.TableMapper;
import org.apache.hadoop.hbase.mapreduce.TableSplit;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.output.NullOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;
import org.apache.hbase.thirdparty.com.google.gson.JsonObject;
import org.apache.hbase.thirdparty.com.google.gson.JsonParser;

public class IndexBuildJob extends Configured implements Tool {
  static final String MODE = "hibase.build.mode", SPEC = "hibase.build.spec",
      INDEX = "hibase.build.index.table", FAMILY = "hibase.build.family";
  /** Per-task counters: group TASKS, names rows:<start hex>, indexed:<start hex>, ms:<..>. */
  static final String TASKS = "hibase.tasks";
  static final int BATCH = 1000;

  /** One map task = one region (TableSplit): its rows sent or indexed, and its time. */
  public static class BuildMapper extends TableMapper<NullWritable, NullWritable> {
    boolean reindex;
    Specs.Spec spec;
    Connection conn;
    Table data;
    BufferedMutator index;
    byte[] family, alias;
    final List<Row> batch = new ArrayList<>();
    final Map<ByteBuffer, long[]> counts = new HashMap<>();
    long rows, indexed, started;
    String start;

    @Override
    protected void setup(Context ctx) throws IOException {
      started = System.nanoTime();
      Configuration conf = ctx.getConfiguration();
      reindex = conf.get(MODE).equals("reindex");
      spec = Specs.parse(conf.get(SPEC).getBytes(StandardCharsets.UTF_8));
      if (spec == null) throw new IOException("hibase build: index definition not usable");
      alias = spec.alias;
      family = conf.get(FAMILY, "").getBytes(StandardCharsets.UTF_8);
      TableSplit split = (TableSplit) ctx.getInputSplit();
      start = HibaseCodec.hex(split.getStartRow());
      conn = ConnectionFactory.createConnection(conf);
      if (reindex) {
        data = conn.getTable(split.getTable());
      } else {
        index = conn.getBufferedMutator(TableName.valueOf(conf.get(INDEX)));
      }
    }

    @Override
    protected void map(ImmutableBytesWritable key, Result r, Context ctx)
        throws IOException, InterruptedException {
      byte[] row = r.getRow();
      rows++;
      if (reindex) {
        Put p = new Put(row).addColumn(family, RowState.b("\u0000hibase-reindex"),
            new byte[0]);
        p.setAttribute(IndexObserver.REINDEX,
            HibaseCodec.hex(alias).getBytes(StandardCharsets.US_ASCII));
        batch.add(p);
        if (batch.size() >= BATCH) flush();
        return;
      }
      RowState.State st = new RowState.State();
      RowState.addCells(st, java.util.Arrays.asList(r.rawCells()));
      byte[][] cells = new byte[spec.columns.length][];
      for (int i = 0; i < cells.length; i++) cells[i] = st.latest(spec.columns[i]);
      byte[] vkey;
      try {
        vkey = HibaseCodec.valueKey(spec.alias, spec.nullAlias, spec.types, cells, st.exists());
      } catch (HibaseCodec.Malformed e) {  // as the coprocessor: that cell is NULL
        vkey = HibaseCodec.valueKeyLenient(spec.alias, spec.nullAlias, spec.types, cells,
            st.exists());
      }
      if (vkey == null) return;
      byte[] payload = RowState.cat(new byte[] {IndexObserver.VERIFIED},
          HibaseCodec.packList(RowState.covered(spec, st)));
      index.mutate(new Put(RowState.cat(vkey, row))
          .addColumn(IndexObserver.V, IndexObserver.V, payload));
      counts.computeIfAbsent(ByteBuffer.wrap(vkey), k -> new long[1])[0]++;
      indexed++;
    }

    void flush() throws IOException {
      if (batch.isEmpty()) return;
      Object[] results = new Object[batch.size()];
      try {
        data.batch(batch, results);
      } catch (InterruptedException e) {
        throw new InterruptedIOException("interrupted sending hibase reindex requests");
      }
      indexed += batch.size();
      batch.clear();
    }

    @Override
    protected void cleanup(Context ctx) throws IOException {
      try {
        if (reindex) {
          flush();
        } else {
          byte[] qual = new byte[8];
          new SecureRandom().nextBytes(qual);
          for (Map.Entry<ByteBuffer, long[]> e : counts.entrySet()) {
            index.mutate(new Put(e.getKey().array()).addColumn(IndexObserver.C, qual,
                ByteBuffer.allocate(8).putLong(e.getValue()[0]).array()));
          }
          index.flush();
        }
      } finally {
        if (data != null) data.close();
        if (index != null) index.close();
        conn.close();
      }
      ctx.getCounter(TASKS, "rows:" + start).increment(rows);
      ctx.getCounter(TASKS, "indexed:" + start).increment(indexed);
      ctx.getCounter(TASKS, "ms:" + start).increment((System.nanoTime() - started) / 1_000_000);
    }
  }

  @Override
  public int run(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: IndexBuildJob MODE SPEC.json DATA_TABLE INDEX_TABLE REPORT.json");
      return 2;
    }
    String mode = args[0];
    String specJson = new String(Files.readAllBytes(Paths.get(args[1])), StandardCharsets.UTF_8);
    Specs.Spec spec = Specs.parse(specJson.getBytes(StandardCharsets.UTF_8));
    if (spec == null) throw new IllegalArgumentException("index definition not usable");
    Configuration conf = getConf();
    conf.set(MODE, mode);
    conf.set(SPEC, specJson);
    conf.set(INDEX, args[3]);
    Scan scan = new Scan().setCaching(1000).setCacheBlocks(false);
    if (mode.equals("reindex")) {  // row keys only
      scan.setFilter(new FilterList(new FirstKeyOnlyFilter(), new KeyOnlyFilter()));
      try (Connection c = ConnectionFactory.createConnection(conf)) {
        byte[] fam = c.getTable(TableName.valueOf(args[2])).getDescriptor()
            .getColumnFamilies()[0].getName();
        conf.set(FAMILY, new String(fam, StandardCharsets.UTF_8));
      }
    } else if (mode.equals("entries")) {
      if (spec.nullAlias == null) {  // else the whole row: does any cell exist?
        for (byte[][] cols : new byte[][][] {spec.columns, spec.covering}) {
          for (byte[] col : cols) {
            int i = RowState.indexOf(col, (byte) ':');
            scan.addColumn(java.util.Arrays.copyOfRange(col, 0, i),
                java.util.Arrays.copyOfRange(col, i + 1, col.length));
          }
        }
      }
    } else {
      throw new IllegalArgumentException("mode must be reindex or entries, not " + mode);
    }
    // the per-task counters (3 per region) must fit
    conf.setInt("mapreduce.job.counters.max", Math.max(conf.getInt("mapreduce.job.counters.max",
        120), 3 * conf.getInt("hibase.build.regions", 1000) + 200));
    Job job = Job.getInstance(conf, "hibase index build " + spec.name + " on " + args[2]);
    job.setJarByClass(IndexBuildJob.class);
    boolean local = conf.get("mapreduce.framework.name", "local").equals("local");
    TableMapReduceUtil.initTableMapperJob(args[2], scan, BuildMapper.class, NullWritable.class,
        NullWritable.class, job, !local);  // YARN: ship the dependency jars with the job
    job.setNumReduceTasks(0);
    job.setOutputFormatClass(NullOutputFormat.class);
    job.setSpeculativeExecution(false);  // a second attempt of a region would only repeat it
    long t0 = System.nanoTime();
    boolean ok = job.waitForCompletion(true);
    double seconds = (System.nanoTime() - t0) / 1e9;
    Map<String, long[]> tasks = new java.util.TreeMap<>();
    long rows = 0, indexed = 0;
    CounterGroup g = job.getCounters().getGroup(TASKS);
    for (Counter c : g) {
      String[] kv = c.getName().split(":", 2);
      long[] t = tasks.computeIfAbsent(kv[1], k -> new long[3]);
      int slot = kv[0].equals("rows") ? 0 : kv[0].equals("indexed") ? 1 : 2;
      t[slot] = c.getValue();
      if (slot == 0) rows += c.getValue();
      if (slot == 1) indexed += c.getValue();
    }
    JsonObject report = new JsonObject();
    report.addProperty("ok", ok);
    report.addProperty("job", job.getJobID() == null ? "" : job.getJobID().toString());
    report.addProperty("mode", mode);
    report.addProperty("seconds", seconds);
    report.addProperty("rows", rows);
    report.addProperty("indexed", indexed);
    org.apache.hbase.thirdparty.com.google.gson.JsonArray list =
        new org.apache.hbase.thirdparty.com.google.gson.JsonArray();
    for (Map.Entry<String, long[]> e : tasks.entrySet()) {
      JsonObject t = new JsonObject();
      t.addProperty("start", e.getKey());
      t.addProperty("rows", e.getValue()[0]);
      t.addProperty("indexed", e.getValue()[1]);
      t.addProperty("ms", e.getValue()[2]);
      list.add(t);
    }
    report.add("tasks", list);
    try (Writer w = Files.newBufferedWriter(Paths.get(args[4]), StandardCharsets.UTF_8)) {
      w.write(report.toString());
    }
    return ok ? 0 : 1;
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    if (conf.get("mapreduce.framework.name") == null) conf.set("mapreduce.framework.name", "local");
    System.exit(ToolRunner.run(conf, new IndexBuildJob(), args));
  }
}
