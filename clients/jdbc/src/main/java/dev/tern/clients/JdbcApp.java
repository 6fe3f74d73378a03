package dev.tern.clients;

import java.math.BigDecimal;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * A small application on pgjdbc against {@code tern serve}: a schema with keys, foreign keys
 * and indexes; generated keys; joins and aggregates; updates, deletes, transactions and
 * savepoints; a retried serialization failure; every type round-tripped in text and in binary
 * (prepareThreshold 0 and -1); DatabaseMetaData (getTables, getColumns, getPrimaryKeys,
 * getImportedKeys, getIndexInfo); ResultSetMetaData.getTableName; and the shared driver_dates
 * table. Run: {@code java -cp ... dev.tern.clients.JdbcApp jdbc:postgresql://host:port/tern?user=tern}.
 */
public final class JdbcApp {
    private static void expect(boolean ok, String what, Object... got) {
        if (!ok) {
            throw new AssertionError(what + ": " + Arrays.deepToString(got));
        }
    }

    private static String sqlstate(Connection connection, String sql) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(sql);
            return null;
        } catch (SQLException error) {
            return error.getSQLState();
        }
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        try (Connection connection = DriverManager.getConnection(url)) {
            schema(connection);
            application(connection);
            conflict(url);
            metadata(connection);
            everyType(connection, "text", url + "&prepareThreshold=0");
            everyType(connection, "binary", url + "&prepareThreshold=-1&binaryTransfer=true");
            driverDates(connection);
        }
        System.out.println("pgjdbc: all checks passed");
    }

    private static void schema(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE jdbc_department (id SERIAL PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE)");
            statement.execute("CREATE TABLE jdbc_employee (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                    + " department_id INT NOT NULL REFERENCES jdbc_department(id) ON DELETE CASCADE,"
                    + " name TEXT NOT NULL, hired DATE NOT NULL, salary NUMERIC(10, 2))");
            statement.execute("CREATE INDEX jdbc_employee_hired ON jdbc_employee (department_id, hired)");
        }
    }

    private static void application(Connection connection) throws SQLException {
        List<Long> departments = new ArrayList<>();
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO jdbc_department (name) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
            for (String name : List.of("research", "sales")) {
                insert.setString(1, name);
                insert.executeUpdate();
                try (ResultSet keys = insert.getGeneratedKeys()) {
                    expect(keys.next(), "a generated key");
                    departments.add(keys.getLong("id"));
                }
            }
        }
        expect(departments.equals(List.of(1L, 2L)), "generated keys", departments);
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO jdbc_employee (department_id, name, hired, salary) VALUES (?, ?, ?, ?)",
                new String[] {"id"})) {
            Object[][] rows = {
                {1L, "ada", LocalDate.of(2020, 2, 29), new BigDecimal("5000.50")},
                {1L, "alan", LocalDate.of(2021, 3, 1), null},
                {2L, "grace", LocalDate.of(2019, 12, 31), new BigDecimal("7000.00")},
            };
            for (Object[] row : rows) {
                insert.setLong(1, (Long) row[0]);
                insert.setString(2, (String) row[1]);
                insert.setDate(3, Date.valueOf((LocalDate) row[2]));
                insert.setBigDecimal(4, (BigDecimal) row[3]);
                insert.addBatch();
            }
            int[] counts = insert.executeBatch();
            expect(Arrays.stream(counts).allMatch(count -> count == 1), "batch counts", counts);
            try (ResultSet keys = insert.getGeneratedKeys()) {
                List<Long> ids = new ArrayList<>();
                while (keys.next()) {
                    ids.add(keys.getLong(1));
                }
                expect(ids.equals(List.of(1L, 2L, 3L)), "batch generated keys", ids);
            }
        }
        try (PreparedStatement query = connection.prepareStatement(
                "SELECT d.name, count(*), sum(e.salary), min(e.hired) FROM jdbc_department d"
                        + " JOIN jdbc_employee e ON e.department_id = d.id GROUP BY d.name ORDER BY d.name");
                ResultSet rows = query.executeQuery()) {
            expect(rows.next(), "research row");
            expect(rows.getString(1).equals("research") && rows.getLong(2) == 2
                    && rows.getBigDecimal(3).compareTo(new BigDecimal("5000.50")) == 0
                    && rows.getDate(4).toLocalDate().equals(LocalDate.of(2020, 2, 29)), "research totals",
                    rows.getString(1), rows.getLong(2), rows.getBigDecimal(3), rows.getDate(4));
            expect(rows.next() && rows.getString(1).equals("sales"), "sales row");
        }
        // setDate's own format finds the row again.
        try (PreparedStatement query = connection.prepareStatement("SELECT name FROM jdbc_employee WHERE hired = ?")) {
            query.setDate(1, Date.valueOf("2020-02-29"));
            try (ResultSet rows = query.executeQuery()) {
                expect(rows.next() && rows.getString(1).equals("ada") && !rows.next(), "date filter");
            }
        }
        expect("23503".equals(sqlstate(connection,
                "INSERT INTO jdbc_employee (department_id, name, hired) VALUES (9, 'x', '2020-01-01')")), "foreign key");
        expect("23505".equals(sqlstate(connection, "INSERT INTO jdbc_department (name) VALUES ('sales')")), "unique");

        connection.setAutoCommit(false);
        try (Statement statement = connection.createStatement()) {
            statement.executeUpdate("UPDATE jdbc_employee SET salary = coalesce(salary, 0) + 100");
            Savepoint savepoint = connection.setSavepoint("before_delete");
            statement.executeUpdate("DELETE FROM jdbc_department WHERE name = 'research'");
            connection.rollback(savepoint);
            int deleted = statement.executeUpdate("DELETE FROM jdbc_employee WHERE name = 'alan'");
            expect(deleted == 1, "deleted", deleted);
            connection.commit();
        } finally {
            connection.setAutoCommit(true);
        }
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT count(*), sum(salary) FROM jdbc_employee")) {
            rows.next();
            expect(rows.getInt(1) == 2 && rows.getBigDecimal(2).compareTo(new BigDecimal("12200.50")) == 0,
                    "after the transaction", rows.getInt(1), rows.getBigDecimal(2));
        }
    }

    private static void bump(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            BigDecimal salary;
            try (ResultSet rows = statement.executeQuery("SELECT salary FROM jdbc_employee WHERE name = 'grace'")) {
                rows.next();
                salary = rows.getBigDecimal(1);
            }
            statement.executeUpdate("UPDATE jdbc_employee SET salary = " + salary.add(BigDecimal.ONE) + " WHERE name = 'grace'");
        }
    }

    private static void conflict(String url) throws SQLException {
        try (Connection first = DriverManager.getConnection(url); Connection second = DriverManager.getConnection(url)) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            bump(first);
            bump(second);
            first.commit();
            try {
                second.commit();
                throw new AssertionError("the second commit must fail");
            } catch (SQLException error) {
                expect("40001".equals(error.getSQLState()), "serialization failure", error.getSQLState());
            }
            for (int attempt = 1; ; attempt++) {
                try {
                    bump(second);
                    second.commit();
                    break;
                } catch (SQLException error) {
                    second.rollback();
                    expect("40001".equals(error.getSQLState()) && attempt < 5, "retry", error.getMessage());
                }
            }
            try (Statement statement = second.createStatement();
                    ResultSet rows = statement.executeQuery("SELECT salary FROM jdbc_employee WHERE name = 'grace'")) {
                rows.next();
                expect(rows.getBigDecimal(1).compareTo(new BigDecimal("7102.00")) == 0, "after the retry", rows.getBigDecimal(1));
            }
            second.commit();
        }
    }

    private static void metadata(Connection connection) throws SQLException {
        DatabaseMetaData meta = connection.getMetaData();
        List<String> tables = new ArrayList<>();
        try (ResultSet rows = meta.getTables(null, "public", "jdbc_%", new String[] {"TABLE"})) {
            while (rows.next()) {
                tables.add(rows.getString("TABLE_NAME"));
            }
        }
        expect(tables.equals(List.of("jdbc_department", "jdbc_employee")), "getTables", tables);
        List<String> columns = new ArrayList<>();
        try (ResultSet rows = meta.getColumns(null, "public", "jdbc_employee", "%")) {
            while (rows.next()) {
                columns.add(rows.getString("COLUMN_NAME") + ":" + rows.getString("TYPE_NAME") + ":" + rows.getInt("NULLABLE"));
            }
        }
        expect(columns.equals(List.of("id:int8:0", "department_id:int4:0", "name:text:0", "hired:date:0", "salary:numeric:1")),
                "getColumns", columns);
        try (ResultSet rows = meta.getPrimaryKeys(null, "public", "jdbc_employee")) {
            expect(rows.next() && rows.getString("COLUMN_NAME").equals("id") && !rows.next(), "getPrimaryKeys");
        }
        try (ResultSet rows = meta.getImportedKeys(null, "public", "jdbc_employee")) {
            expect(rows.next(), "getImportedKeys has a row");
            expect(rows.getString("PKTABLE_NAME").equals("jdbc_department") && rows.getString("PKCOLUMN_NAME").equals("id")
                    && rows.getString("FKCOLUMN_NAME").equals("department_id")
                    && rows.getInt("DELETE_RULE") == DatabaseMetaData.importedKeyCascade, "getImportedKeys",
                    rows.getString("PKTABLE_NAME"), rows.getString("PKCOLUMN_NAME"), rows.getInt("DELETE_RULE"));
            expect(!rows.next(), "one imported key");
        }
        List<String> indexes = new ArrayList<>();
        try (ResultSet rows = meta.getIndexInfo(null, "public", "jdbc_employee", false, false)) {
            while (rows.next()) {
                indexes.add(rows.getString("INDEX_NAME") + ":" + rows.getString("COLUMN_NAME") + ":" + rows.getShort("ORDINAL_POSITION"));
            }
        }
        expect(indexes.containsAll(List.of("jdbc_employee_hired:department_id:1", "jdbc_employee_hired:hired:2")),
                "getIndexInfo", indexes);
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT name, hired FROM jdbc_employee")) {
            ResultSetMetaData result = rows.getMetaData();
            expect(result.getTableName(1).equals("jdbc_employee") && result.getColumnType(2) == java.sql.Types.DATE,
                    "ResultSetMetaData", result.getTableName(1), result.getColumnType(2));
        }
    }

    private static void everyType(Connection setup, String name, String url) throws SQLException {
        String table = "jdbc_types_" + name;
        try (Statement statement = setup.createStatement()) {
            statement.execute("CREATE TABLE " + table + " (id INT PRIMARY KEY, a SMALLINT, b INTEGER, c BIGINT,"
                    + " d NUMERIC(20,6), e REAL, f DOUBLE PRECISION, g TEXT, h BOOLEAN, i DATE, j TIMESTAMP,"
                    + " k TIMESTAMPTZ, l TIME, m BYTEA, n UUID, o INTEGER[], p TEXT[])");
        }
        LocalDateTime moment = LocalDateTime.of(1999, 12, 31, 23, 59, 58, 123456000);
        OffsetDateTime instant = OffsetDateTime.of(2021, 6, 1, 10, 30, 0, 0, ZoneOffset.UTC);
        UUID id = UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        byte[] raw = {0, 1, (byte) 254, (byte) 255};
        try (Connection connection = DriverManager.getConnection(url)) {
            for (int round = 0; round < 6; round++) { // past prepareThreshold, the driver switches to binary
                try (PreparedStatement insert = connection.prepareStatement(
                        "INSERT INTO " + table + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
                    insert.setInt(1, round);
                    insert.setShort(2, (short) -32768);
                    insert.setInt(3, Integer.MAX_VALUE);
                    insert.setLong(4, Long.MIN_VALUE);
                    insert.setBigDecimal(5, new BigDecimal("-12345678901234.567891"));
                    insert.setFloat(6, 1.5f);
                    insert.setDouble(7, 0.1);
                    insert.setString(8, "naïve ☃ 'q' \\");
                    insert.setBoolean(9, true);
                    insert.setObject(10, LocalDate.of(2024, 2, 29));
                    insert.setObject(11, moment);
                    insert.setObject(12, instant);
                    insert.setObject(13, LocalTime.of(8, 15, 30, 250000000));
                    insert.setBytes(14, raw);
                    insert.setObject(15, id);
                    insert.setArray(16, connection.createArrayOf("int4", new Integer[] {1, null, 3}));
                    insert.setArray(17, connection.createArrayOf("text", new String[] {"a", "b c", ""}));
                    insert.executeUpdate();
                }
                try (PreparedStatement query = connection.prepareStatement("SELECT * FROM " + table + " WHERE id = ? AND i = ? AND n = ?")) {
                    query.setInt(1, round);
                    query.setObject(2, LocalDate.of(2024, 2, 29));
                    query.setObject(3, id);
                    try (ResultSet rows = query.executeQuery()) {
                        expect(rows.next(), name + " row " + round);
                        expect(rows.getShort("a") == -32768 && rows.getInt("b") == Integer.MAX_VALUE && rows.getLong("c") == Long.MIN_VALUE,
                                name + " integers");
                        expect(rows.getBigDecimal("d").equals(new BigDecimal("-12345678901234.567891")), name + " numeric", rows.getBigDecimal("d"));
                        expect(rows.getFloat("e") == 1.5f && rows.getDouble("f") == 0.1, name + " floats");
                        expect(rows.getString("g").equals("naïve ☃ 'q' \\") && rows.getBoolean("h"), name + " text/bool");
                        expect(rows.getObject("i", LocalDate.class).equals(LocalDate.of(2024, 2, 29)), name + " date", rows.getObject("i"));
                        expect(rows.getObject("j", LocalDateTime.class).equals(moment), name + " timestamp", rows.getObject("j"));
                        expect(rows.getObject("k", OffsetDateTime.class).isEqual(instant), name + " timestamptz", rows.getObject("k"));
                        expect(rows.getObject("l", LocalTime.class).equals(LocalTime.of(8, 15, 30, 250000000)), name + " time", rows.getObject("l"));
                        expect(Arrays.equals(rows.getBytes("m"), raw), name + " bytea");
                        expect(id.equals(rows.getObject("n")), name + " uuid", rows.getObject("n"));
                        Array numbers = rows.getArray("o");
                        expect(Arrays.equals((Integer[]) numbers.getArray(), new Integer[] {1, null, 3}), name + " int[]", numbers);
                        expect(Arrays.equals((String[]) rows.getArray("p").getArray(), new String[] {"a", "b c", ""}), name + " text[]");
                    }
                }
            }
        }
    }

    private static void driverDates(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE IF NOT EXISTS driver_dates (driver TEXT PRIMARY KEY, day DATE, moment TIMESTAMP, instant TIMESTAMPTZ)");
        }
        LocalDate day = LocalDate.of(2020, 2, 29);
        LocalDateTime moment = LocalDateTime.of(2020, 2, 29, 13, 14, 15, 123456000);
        OffsetDateTime instant = OffsetDateTime.of(moment, ZoneOffset.UTC);
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO driver_dates VALUES (?, ?, ?, ?)")) {
            insert.setString(1, "pgjdbc");
            insert.setDate(2, Date.valueOf(day));
            insert.setTimestamp(3, Timestamp.valueOf(moment));
            insert.setObject(4, instant);
            insert.executeUpdate();
        }
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT driver, day, moment, instant FROM driver_dates ORDER BY driver")) {
            while (rows.next()) {
                String driver = rows.getString(1);
                expect(Objects.equals(rows.getObject(2, LocalDate.class), day)
                        && Objects.equals(rows.getObject(3, LocalDateTime.class), moment)
                        && rows.getObject(4, OffsetDateTime.class).isEqual(instant),
                        "the row " + driver + " wrote", rows.getObject(2), rows.getObject(3), rows.getObject(4));
            }
        }
    }
}
