// A small application on pgx v5 against `tern serve`: a schema with keys, foreign keys and
// indexes; generated keys; joins and aggregates; updates, deletes, transactions and
// savepoints; a retried serialization failure; CopyFrom (binary COPY); every type round-tripped
// through the extended protocol (binary) and the simple protocol (text); and the shared
// driver_dates table, whose rows every client stack writes and reads back equal.
//
//	go run . postgres://tern@127.0.0.1:5433/tern
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

var ctx = context.Background()

func check(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgx: %s: %v\n", what, err)
		os.Exit(1)
	}
}

func expect(ok bool, format string, args ...any) {
	if !ok {
		fmt.Fprintf(os.Stderr, "pgx: "+format+"\n", args...)
		os.Exit(1)
	}
}

func sqlstate(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func main() {
	url := os.Args[1]
	conn, err := pgx.Connect(ctx, url)
	check(err, "connect")
	defer conn.Close(ctx)

	schema(conn)
	application(conn)
	conflict(url)
	copyFrom(conn)
	everyType(conn, pgx.QueryExecModeCacheStatement, "extended")
	everyType(conn, pgx.QueryExecModeSimpleProtocol, "simple")
	introspect(conn)
	driverDates(conn, "pgx")
	fmt.Println("pgx: all checks passed")
}

func schema(conn *pgx.Conn) {
	for _, statement := range []string{
		`CREATE TABLE go_warehouse (id SERIAL PRIMARY KEY, city TEXT NOT NULL UNIQUE)`,
		`CREATE TABLE go_stock (id BIGSERIAL PRIMARY KEY,
			warehouse_id INT NOT NULL REFERENCES go_warehouse(id) ON DELETE CASCADE,
			item TEXT NOT NULL, quantity INT NOT NULL CHECK (quantity >= 0), counted DATE)`,
		`CREATE INDEX go_stock_item ON go_stock (item)`,
	} {
		_, err := conn.Exec(ctx, statement)
		check(err, statement)
	}
}

func application(conn *pgx.Conn) {
	var porto, braga int
	check(conn.QueryRow(ctx, `INSERT INTO go_warehouse (city) VALUES ($1) RETURNING id`, "Porto").Scan(&porto), "insert")
	check(conn.QueryRow(ctx, `INSERT INTO go_warehouse (city) VALUES ($1) RETURNING id`, "Braga").Scan(&braga), "insert")
	expect(porto == 1 && braga == 2, "generated keys %d %d", porto, braga)
	counted := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	for _, row := range []struct {
		warehouse int
		item      string
		quantity  int
	}{{porto, "bolts", 100}, {porto, "nuts", 250}, {braga, "bolts", 40}} {
		_, err := conn.Exec(ctx, `INSERT INTO go_stock (warehouse_id, item, quantity, counted) VALUES ($1, $2, $3, $4)`,
			row.warehouse, row.item, row.quantity, counted)
		check(err, "insert stock")
	}
	rows, err := conn.Query(ctx, `SELECT w.city, count(*), sum(s.quantity) FROM go_warehouse w
		JOIN go_stock s ON s.warehouse_id = w.id GROUP BY w.city ORDER BY w.city`)
	check(err, "join")
	type total struct {
		City  string
		Items int64
		Sum   int64
	}
	totals, err := pgx.CollectRows(rows, pgx.RowToStructByPos[total])
	check(err, "collect")
	expect(reflect.DeepEqual(totals, []total{{"Braga", 1, 40}, {"Porto", 2, 350}}), "totals %v", totals)

	var items int
	check(conn.QueryRow(ctx, `SELECT count(*) FROM go_stock WHERE counted = $1`, counted).Scan(&items), "date filter")
	expect(items == 3, "date filter found %d", items)

	_, err = conn.Exec(ctx, `INSERT INTO go_stock (warehouse_id, item, quantity) VALUES (99, 'x', 1)`)
	expect(sqlstate(err) == "23503", "foreign key: %v", err)
	_, err = conn.Exec(ctx, `INSERT INTO go_stock (warehouse_id, item, quantity) VALUES (1, 'x', -1)`)
	expect(sqlstate(err) == "23514", "check: %v", err)

	tx, err := conn.Begin(ctx)
	check(err, "begin")
	_, err = tx.Exec(ctx, `UPDATE go_stock SET quantity = quantity - 10 WHERE item = 'bolts'`)
	check(err, "update")
	savepoint, err := tx.Begin(ctx)
	check(err, "savepoint")
	_, err = savepoint.Exec(ctx, `INSERT INTO go_warehouse (city) VALUES ('Porto')`)
	expect(sqlstate(err) == "23505", "unique: %v", err)
	check(savepoint.Rollback(ctx), "rollback to savepoint")
	tag, err := tx.Exec(ctx, `DELETE FROM go_warehouse WHERE city = 'Braga'`)
	check(err, "delete")
	expect(tag.RowsAffected() == 1, "deleted %d", tag.RowsAffected())
	check(tx.Commit(ctx), "commit")
	var left, bolts int
	check(conn.QueryRow(ctx, `SELECT count(*), sum(quantity) FROM go_stock`).Scan(&left, &bolts), "after")
	expect(left == 2 && bolts == 340, "after the transaction: %d rows, %d", left, bolts)
}

func conflict(url string) {
	first, err := pgx.Connect(ctx, url)
	check(err, "connect")
	defer first.Close(ctx)
	second, err := pgx.Connect(ctx, url)
	check(err, "connect")
	defer second.Close(ctx)
	bump := func(tx pgx.Tx) error {
		var quantity int
		if err := tx.QueryRow(ctx, `SELECT quantity FROM go_stock WHERE item = 'nuts'`).Scan(&quantity); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE go_stock SET quantity = $1 WHERE item = 'nuts'`, quantity+1)
		return err
	}
	one, err := first.Begin(ctx)
	check(err, "begin")
	two, err := second.Begin(ctx)
	check(err, "begin")
	check(bump(one), "first")
	check(bump(two), "second")
	check(one.Commit(ctx), "first commit")
	err = two.Commit(ctx)
	expect(sqlstate(err) == "40001", "the second commit must fail with 40001: %v", err)
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, second, bump)
		if err == nil {
			break
		}
		expect(sqlstate(err) == "40001" && attempt < 5, "retry: %v", err)
	}
	var quantity int
	check(second.QueryRow(ctx, `SELECT quantity FROM go_stock WHERE item = 'nuts'`).Scan(&quantity), "read")
	expect(quantity == 252, "after the retry: %d", quantity)
}

func copyFrom(conn *pgx.Conn) {
	_, err := conn.Exec(ctx, `CREATE TABLE go_reading (sensor INT, at TIMESTAMPTZ, value FLOAT8, note TEXT)`)
	check(err, "create")
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows [][]any
	for i := 0; i < 1000; i++ {
		rows = append(rows, []any{i % 4, base.Add(time.Duration(i) * time.Second), float64(i) / 2, fmt.Sprintf("n%d", i)})
	}
	copied, err := conn.CopyFrom(ctx, pgx.Identifier{"go_reading"}, []string{"sensor", "at", "value", "note"}, pgx.CopyFromRows(rows))
	check(err, "CopyFrom")
	expect(copied == 1000, "copied %d", copied)
	var count int
	var sum float64
	var last time.Time
	check(conn.QueryRow(ctx, `SELECT count(*), sum(value), max(at) FROM go_reading`).Scan(&count, &sum, &last), "read")
	expect(count == 1000 && sum == 249750 && last.Equal(base.Add(999*time.Second)), "copy read back %d %v %v", count, sum, last)
}

func everyType(conn *pgx.Conn, mode pgx.QueryExecMode, name string) {
	table := "go_types_" + name
	_, err := conn.Exec(ctx, `CREATE TABLE `+table+` (id INT PRIMARY KEY, a SMALLINT, b INTEGER, c BIGINT,
		d NUMERIC(20,6), e REAL, f DOUBLE PRECISION, g TEXT, h BOOLEAN, i DATE, j TIMESTAMP, k TIMESTAMPTZ,
		l INTERVAL, m BYTEA, n UUID, o JSONB, p INTEGER[], q TEXT[], r TIME)`)
	check(err, "create "+table)
	numeric := pgtype.Numeric{}
	check(numeric.Scan("-12345678901234.567891"), "numeric")
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	moment := time.Date(1999, 12, 31, 23, 59, 58, 123456000, time.UTC)
	instant := time.Date(2021, 6, 1, 10, 30, 0, 0, time.UTC)
	span := pgtype.Interval{Months: 1, Days: 2, Microseconds: 3_000_005, Valid: true}
	raw := []byte{0, 1, 2, 254, 255}
	id := pgtype.UUID{Bytes: [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}, Valid: true}
	doc := map[string]any{"a": []any{1.0, "two"}}
	clock := pgtype.Time{Microseconds: 8*3600e6 + 15*60e6 + 30e6 + 250000, Valid: true}
	// The simple protocol sends every parameter as text without a type: pgx cannot write a
	// Go map there, so the document goes as its JSON text.
	var docParam any = doc
	if mode == pgx.QueryExecModeSimpleProtocol {
		docParam = `{"a": [1, "two"]}`
	}
	values := []any{1, int16(-32768), int32(2147483647), int64(-9223372036854775808), numeric, float32(1.5), 0.1,
		"naïve ☃ 'q' \\", true, day, moment, instant, span, raw, id, docParam, []int32{1, 2, 3}, []string{"a", "b c", ""}, clock}
	_, err = conn.Exec(ctx, `INSERT INTO `+table+` VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)`,
		append([]any{mode}, values...)...)
	check(err, "insert "+table)

	var (
		a       int16
		b       int32
		c       int64
		d       pgtype.Numeric
		e       float32
		f       float64
		g       string
		h       bool
		i, j, k time.Time
		l       pgtype.Interval
		m       []byte
		n       pgtype.UUID
		o       map[string]any
		p       []int32
		q       []string
		r       pgtype.Time
	)
	err = conn.QueryRow(ctx, `SELECT a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r FROM `+table+` WHERE id = 1`, mode).
		Scan(&a, &b, &c, &d, &e, &f, &g, &h, &i, &j, &k, &l, &m, &n, &o, &p, &q, &r)
	check(err, "select "+table)
	dText, _ := d.Value()
	expect(a == -32768 && b == 2147483647 && c == -9223372036854775808, "%s integers %v %v %v", name, a, b, c)
	expect(dText == "-12345678901234.567891" && e == 1.5 && f == 0.1, "%s numbers %v %v %v", name, dText, e, f)
	expect(g == "naïve ☃ 'q' \\" && h, "%s text/bool %q %v", name, g, h)
	expect(i.Equal(day) && j.Equal(moment) && k.Equal(instant), "%s times %v %v %v", name, i, j, k)
	expect(l == span && reflect.DeepEqual(m, raw) && n == id, "%s interval/bytea/uuid %v %v %v", name, l, m, n)
	expect(reflect.DeepEqual(o, doc) && reflect.DeepEqual(p, []int32{1, 2, 3}) && reflect.DeepEqual(q, []string{"a", "b c", ""}), "%s json/arrays %v %v %v", name, o, p, q)
	expect(r == clock, "%s time %v", name, r)
	var found int
	check(conn.QueryRow(ctx, `SELECT id FROM `+table+` WHERE i = $1 AND k = $2 AND n = $3`, mode, day, instant, id).Scan(&found), "typed filter")
	expect(found == 1, "typed filter found %d", found)
}

// The shared table every client stack writes its own row into, then reads every row of.
func driverDates(conn *pgx.Conn, driver string) {
	_, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS driver_dates (driver TEXT PRIMARY KEY, day DATE, moment TIMESTAMP, instant TIMESTAMPTZ)`)
	check(err, "driver_dates")
	day := time.Date(2020, 2, 29, 0, 0, 0, 0, time.UTC)
	moment := time.Date(2020, 2, 29, 13, 14, 15, 123456000, time.UTC)
	instant := time.Date(2020, 2, 29, 13, 14, 15, 123456000, time.UTC)
	_, err = conn.Exec(ctx, `INSERT INTO driver_dates VALUES ($1, $2, $3, $4)`, driver, day, moment, instant)
	check(err, "write driver_dates")
	rows, err := conn.Query(ctx, `SELECT driver, day, moment, instant FROM driver_dates ORDER BY driver`)
	check(err, "read driver_dates")
	for rows.Next() {
		var who string
		var d, m, t time.Time
		check(rows.Scan(&who, &d, &m, &t), "scan driver_dates")
		expect(d.Equal(day) && m.Equal(moment) && t.Equal(instant), "the row %s wrote reads back as %v %v %v", who, d, m, t)
	}
	check(rows.Err(), "driver_dates rows")
}

// The schema read back: columns from information_schema, the foreign key from pg_constraint.
func introspect(conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT column_name, data_type, is_nullable FROM information_schema.columns
		WHERE table_name = 'go_stock' ORDER BY ordinal_position`)
	check(err, "columns")
	var columns []string
	for rows.Next() {
		var name, kind, nullable string
		check(rows.Scan(&name, &kind, &nullable), "scan columns")
		columns = append(columns, name+" "+kind+" "+nullable)
	}
	check(rows.Err(), "columns")
	expect(reflect.DeepEqual(columns, []string{"id bigint NO", "warehouse_id integer NO", "item text NO",
		"quantity integer NO", "counted date YES"}), "information_schema.columns: %v", columns)
	var name, parent, definition string
	check(conn.QueryRow(ctx, `SELECT conname, confrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE contype = 'f' AND conrelid = 'go_stock'::regclass`).Scan(&name, &parent, &definition), "foreign key")
	expect(name == "go_stock_warehouse_id_fkey" && parent == "go_warehouse" &&
		definition == "FOREIGN KEY (warehouse_id) REFERENCES go_warehouse(id) ON DELETE CASCADE",
		"the foreign key: %s %s %s", name, parent, definition)
}
