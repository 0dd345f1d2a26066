// What Thrift1 cannot do, through HBase's Admin API, for `hibase cluster` and the tests:
// one command per stdin line, one answer line each ("ok <result>" or "error <message>").
//   split <table> <row as hex, or - for HBase's own midpoints>  -> ok true | ok false
//   regions <table>                                           -> ok <start hex>,<start hex>,...
//   flush <table>                                             -> ok true (memstores flushed)
//   servers                          -> ok <port>:<regions>:<meta 0|1>,... (live region servers)
//   locations <table>                -> ok <start hex>@<port>,...   (the server of each region)
//   spread <table>                   -> ok <moved>  (regions moved round-robin over the live
//                                       servers by port, then waits until all are online)
//   shutdown                         -> ok true  (the master stops the whole cluster)
//   coprocessor <table> <spec>       -> ok true  (the HBase shell's `alter 't', METHOD =>
//                                       'table_att', 'coprocessor' => SPEC`: the table
//                                       descriptor gets the coprocessor PATH|CLASS|PRIORITY|)
// Compiled by hibase (javac) against the cluster's classpath; hbase-site.xml on the classpath
// says where ZooKeeper is.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Arrays;
import java.util.List;
import java.util.ArrayList;
import java.util.Comparator;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.ServerMetrics;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.CoprocessorDescriptorBuilder;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;

public class HibaseAdmin {
  public static void main(String[] args) throws Exception {
    try (Connection conn = ConnectionFactory.createConnection(HBaseConfiguration.create());
         Admin admin = conn.getAdmin();
         BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"))) {
      System.out.println("ok ready");
      System.out.flush();
      String line;
      while ((line = in.readLine()) != null) {
        String[] a = line.trim().split(" ");
        String answer;
        try {
          if (a[0].equals("split")) {
            answer = "ok " + split(conn, admin, TableName.valueOf(a[1]),
                                   a[2].equals("-") ? null : hex(a[2]));
          } else if (a[0].equals("flush")) {
            admin.flush(TableName.valueOf(a[1]));
            answer = "ok true";
          } else if (a[0].equals("regions")) {
            StringBuilder sb = new StringBuilder();
            for (RegionInfo r : admin.getRegions(TableName.valueOf(a[1]))) {
              if (sb.length() > 0) sb.append(',');
              sb.append(unhex(r.getStartKey()));
            }
            answer = "ok " + sb;
          } else if (a[0].equals("servers")) {
            answer = "ok " + servers(conn, admin);
          } else if (a[0].equals("locations")) {
            StringBuilder sb = new StringBuilder();
            try (RegionLocator loc = conn.getRegionLocator(TableName.valueOf(a[1]))) {
              for (HRegionLocation l : loc.getAllRegionLocations()) {
                if (sb.length() > 0) sb.append(',');
                ServerName sn = l.getServerName();
                sb.append(unhex(l.getRegion().getStartKey())).append('@')
                  .append(sn == null ? -1 : sn.getPort());
              }
            }
            answer = "ok " + sb;
          } else if (a[0].equals("spread")) {
            answer = "ok " + spread(conn, admin, TableName.valueOf(a[1]));
          } else if (a[0].equals("coprocessor")) {
            TableName t = TableName.valueOf(a[1]);
            String[] spec = a[2].split("\\|", -1);  // PATH|CLASS|PRIORITY|ARGS
            admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
                .setCoprocessor(CoprocessorDescriptorBuilder.newBuilder(spec[1])
                    .setJarPath(spec[0]).setPriority(Integer.parseInt(spec[2])).build())
                .build());
            answer = "ok true";
          } else if (a[0].equals("shutdown")) {
            admin.shutdown();
            answer = "ok true";
          } else {
            answer = "error unknown command " + a[0];
          }
        } catch (Exception e) {
          answer = "error " + String.valueOf(e).replace('\n', ' ');
        }
        System.out.println(answer);
        System.out.flush();
      }
    }
  }

  /** Split at row (null: every region at HBase's midpoint); wait until the daughters are
   *  online. False when row already starts a region or nothing could be split. */
  static boolean split(Connection conn, Admin admin, TableName t, byte[] row) throws Exception {
    List<RegionInfo> before = admin.getRegions(t);
    if (row != null) {
      for (RegionInfo r : before) {
        if (Arrays.equals(r.getStartKey(), row)) return false;
      }
    }
    long deadline = System.currentTimeMillis() + 120_000;
    while (true) {
      try {
        admin.flush(t);
        if (row == null) admin.split(t); else admin.split(t, row);
        break;
      } catch (org.apache.hadoop.hbase.DoNotRetryIOException e) {
        // a daughter of a recent split still has reference files: compact it, retry
        if (System.currentTimeMillis() > deadline) throw e;
        admin.majorCompact(t);
        Thread.sleep(200);
      }
    }
    long wait = System.currentTimeMillis() + (row == null ? 10_000 : 120_000);
    while (System.currentTimeMillis() < wait) {
      List<RegionInfo> now = admin.getRegions(t);
      if ((row == null ? now.size() > before.size() : hasStart(now, row)) && online(conn, t)) {
        return true;
      }
      Thread.sleep(50);
    }
    if (row != null) throw new RuntimeException("split did not finish within 120 s");
    return false;
  }

  /** port:regions:hostsMeta of each live region server, by port. */
  static String servers(Connection conn, Admin admin) throws Exception {
    ServerName meta = null;
    try (RegionLocator loc = conn.getRegionLocator(TableName.META_TABLE_NAME)) {
      meta = loc.getRegionLocation(new byte[0], true).getServerName();
    }
    ClusterMetrics cm = admin.getClusterMetrics();
    List<ServerName> live = new ArrayList<>(cm.getLiveServerMetrics().keySet());
    live.sort(Comparator.comparingInt(ServerName::getPort));
    StringBuilder sb = new StringBuilder();
    for (ServerName sn : live) {
      if (sb.length() > 0) sb.append(',');
      ServerMetrics m = cm.getLiveServerMetrics().get(sn);
      sb.append(sn.getPort()).append(':').append(m.getRegionMetrics().size()).append(':')
        .append(sn.equals(meta) ? 1 : 0);
    }
    return sb.toString();
  }

  /** Move t's regions round-robin over the live region servers (sorted by port); wait until
   *  every region is online again. Returns how many moved. */
  static int spread(Connection conn, Admin admin, TableName t) throws Exception {
    List<ServerName> live = new ArrayList<>(admin.getRegionServers());
    live.sort(Comparator.comparingInt(ServerName::getPort));
    List<HRegionLocation> locs;
    try (RegionLocator loc = conn.getRegionLocator(t)) {
      locs = loc.getAllRegionLocations();
    }
    locs.sort((x, y) -> org.apache.hadoop.hbase.util.Bytes.compareTo(
        x.getRegion().getStartKey(), y.getRegion().getStartKey()));
    int moved = 0;
    for (int i = 0; i < locs.size(); i++) {
      ServerName want = live.get(i % live.size());
      HRegionLocation l = locs.get(i);
      if (want.equals(l.getServerName())) continue;
      admin.move(l.getRegion().getEncodedNameAsBytes(), want);
      moved++;
    }
    long wait = System.currentTimeMillis() + 120_000;
    while (System.currentTimeMillis() < wait) {
      if (online(conn, t)) return moved;
      Thread.sleep(50);
    }
    throw new RuntimeException("regions not online within 120 s after the moves");
  }

  /** Every region of t has a server in hbase:meta (none in transition). */
  static boolean online(Connection conn, TableName t) throws Exception {
    try (RegionLocator loc = conn.getRegionLocator(t)) {
      List<HRegionLocation> all = loc.getAllRegionLocations();
      for (HRegionLocation l : all) {
        if (l == null || l.getServerName() == null || l.getRegion().isOffline()
            || l.getRegion().isSplitParent()) return false;
      }
      return !all.isEmpty();
    }
  }

  static boolean hasStart(List<RegionInfo> regions, byte[] row) {
    for (RegionInfo r : regions) {
      if (Arrays.equals(r.getStartKey(), row)) return true;
    }
    return false;
  }

  static byte[] hex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    return b;
  }

  static String unhex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) sb.append(String.format("%02x", x));
    return sb.length() == 0 ? "-" : sb.toString();
  }
}
