// What HBase's shell has no statement for, through HBase's Java client: checkAndMutate (the
// shell's put, deleteall, delete, incr and append are driven through `hibase cluster shell`).
// One command per stdin line, "ok ..." or "error <message>" back.
//   checkandput <table> <row hex> <family:qualifier> <value hex>  put if the cell is absent
//                                                         -> ok true | ok false
// hbase-site.xml on the classpath says where ZooKeeper is (tests/test_coprocessor.py).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Table;

public class ShellWrites {
  public static void main(String[] args) throws Exception {
    try (Connection conn = ConnectionFactory.createConnection(HBaseConfiguration.create());
         BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"))) {
      System.out.println("ok ready");
      System.out.flush();
      String line;
      while ((line = in.readLine()) != null) {
        String[] a = line.trim().split(" ");
        String answer = "ok";
        try (Table t = conn.getTable(TableName.valueOf(a[1]))) {
          byte[] row = hex(a[2]);
          byte[][] col = a.length > 3 ? column(a[3]) : null;
          switch (a[0]) {
            case "checkandput":
              answer = "ok " + t.checkAndMutate(CheckAndMutate.newBuilder(row)
                  .ifNotExists(col[0], col[1])
                  .build(new Put(row).addColumn(col[0], col[1], hex(a[4])))).isSuccess();
              break;
            default:
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

  static byte[][] column(String c) {
    int i = c.indexOf(':');
    return new byte[][] {c.substring(0, i).getBytes(), c.substring(i + 1).getBytes()};
  }

  static byte[] hex(String s) {
    if (s.equals("-")) return new byte[0];
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    return b;
  }
}
