// Drives Apache Phoenix through JDBC for hibase.cluster.phoenix: one connection (thick client)
// to jdbc:phoenix:<args[0]> (further args: key=value properties), one JSON request per stdin
// line, one JSON answer per stdout line.
// Requests: {"op": "execute"|"upsert_many"|"time_query", "sql", "params" | "rows", "batch",
// "repeat"}; answers {"ok": true, ...} or {"ok": false, "error": "<Phoenix's message>"}.
// Values: JSON numbers/strings/booleans/null; bytes as {"b64": ...}; DECIMAL as {"dec": "..."};
// DATE/TIME/TIMESTAMP as {"ms": epoch millis}.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import java.util.Base64;
import java.util.Properties;

public class PhoenixBridge {
    static final ObjectMapper M = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        System.setOut(System.err);  // anything Phoenix prints stays off the protocol
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Connection conn;
        long t0 = System.nanoTime();
        try {
            Properties props = new Properties();
            for (int i = 1; i < args.length; i++) {  // key=value connection properties
                int eq = args[i].indexOf('=');
                props.setProperty(args[i].substring(0, eq), args[i].substring(eq + 1));
            }
            conn = DriverManager.getConnection("jdbc:phoenix:" + args[0], props);
            conn.setAutoCommit(false);
        } catch (Throwable e) {
            out.println(error(e));
            return;
        }
        ObjectNode hello = M.createObjectNode();
        hello.put("ok", true);
        hello.put("connect_s", (System.nanoTime() - t0) / 1e9);
        out.println(hello);
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = handle(conn, M.readTree(line)).toString();
            } catch (Throwable e) {
                try { conn.rollback(); } catch (SQLException ignored) { }
                answer = error(e);
            }
            out.println(answer);
        }
        conn.close();
    }

    static String error(Throwable e) {
        ObjectNode o = M.createObjectNode();
        o.put("ok", false);
        String msg = e.getMessage();
        o.put("error", e.getClass().getSimpleName() + ": " + (msg == null ? "" : msg));
        return o.toString();
    }

    static ObjectNode handle(Connection conn, JsonNode req) throws Exception {
        String op = req.get("op").asText();
        ObjectNode o = M.createObjectNode();
        o.put("ok", true);
        try (PreparedStatement ps = conn.prepareStatement(req.get("sql").asText())) {
            if (op.equals("execute")) {
                bind(ps, req.get("params"));
                if (ps.execute()) {
                    ArrayNode rows = o.putArray("rows");
                    try (ResultSet rs = ps.getResultSet()) {
                        int n = rs.getMetaData().getColumnCount();
                        while (rs.next()) {
                            ArrayNode row = rows.addArray();
                            for (int i = 1; i <= n; i++) row.add(value(rs.getObject(i)));
                        }
                    }
                } else {
                    conn.commit();
                    o.putArray("rows");
                    o.put("updated", ps.getUpdateCount());
                }
            } else if (op.equals("upsert_many")) {
                int batch = req.get("batch").asInt();
                int pending = 0;
                long t = System.nanoTime();
                for (JsonNode row : req.get("rows")) {
                    bind(ps, row);
                    ps.executeUpdate();
                    if (++pending >= batch) { conn.commit(); pending = 0; }
                }
                conn.commit();
                o.put("seconds", (System.nanoTime() - t) / 1e9);
            } else if (op.equals("time_query")) {
                bind(ps, req.get("params"));
                ArrayNode times = o.putArray("seconds");
                long rowsSeen = 0;
                for (int r = req.get("repeat").asInt(); r > 0; r--) {
                    long t = System.nanoTime();
                    try (ResultSet rs = ps.executeQuery()) {
                        int n = rs.getMetaData().getColumnCount();
                        while (rs.next()) {
                            for (int i = 1; i <= n; i++) rs.getObject(i);
                            rowsSeen++;
                        }
                    }
                    times.add((System.nanoTime() - t) / 1e9);
                }
                o.put("rows", rowsSeen);
            } else {
                throw new IllegalArgumentException("unknown op " + op);
            }
        }
        return o;
    }

    static void bind(PreparedStatement ps, JsonNode params) throws SQLException {
        if (params == null) return;
        int i = 1;
        for (JsonNode p : params) {
            if (p.isNull()) ps.setObject(i, null);
            else if (p.isBoolean()) ps.setBoolean(i, p.asBoolean());
            else if (p.isIntegralNumber()) ps.setLong(i, p.asLong());
            else if (p.isNumber()) ps.setDouble(i, p.asDouble());
            else if (p.isTextual()) ps.setString(i, p.asText());
            else if (p.has("b64")) ps.setBytes(i, Base64.getDecoder().decode(p.get("b64").asText()));
            else if (p.has("dec")) ps.setBigDecimal(i, new BigDecimal(p.get("dec").asText()));
            else if (p.has("ms")) ps.setTimestamp(i, new Timestamp(p.get("ms").asLong()));
            else throw new IllegalArgumentException("cannot bind " + p);
            i++;
        }
    }

    static JsonNode value(Object v) {
        if (v == null) return M.nullNode();
        if (v instanceof Boolean) return M.getNodeFactory().booleanNode((Boolean) v);
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte)
            return M.getNodeFactory().numberNode(((Number) v).longValue());
        if (v instanceof Double || v instanceof Float)
            return M.getNodeFactory().numberNode(((Number) v).doubleValue());
        ObjectNode o = M.createObjectNode();
        if (v instanceof BigDecimal) o.put("dec", ((BigDecimal) v).toPlainString());
        else if (v instanceof byte[]) o.put("b64", Base64.getEncoder().encodeToString((byte[]) v));
        else if (v instanceof java.util.Date) o.put("ms", ((java.util.Date) v).getTime());
        else return M.getNodeFactory().textNode(v.toString());
        return o;
    }
}
