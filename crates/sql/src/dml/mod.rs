//! INSERT, UPDATE and DELETE: one SQL row becomes several key-value writes (the row under its
//! table's key, one entry per index), with NOT NULL, CHECK, primary-key and UNIQUE constraints
//! and conflict clauses (OR REPLACE / OR IGNORE / ON CONFLICT DO NOTHING / DO UPDATE).
//!
//! A statement is bound once into a [`DmlPlan`] (target table, its indexes and CHECK
//! expressions, source query or scan, assignments, RETURNING) and executed with
//! [`execute`]; a prepared statement keeps the plan until the schema changes.

pub mod delta;
pub mod foreign_key;
pub mod merge;
pub mod overriding;
pub mod trigger;
pub mod upsert;

use crate::bind::{Binder, OutputColumn, Scope, ScopeColumn, lower, object_name};
use crate::dml::foreign_key::Rules;
use crate::dml::foreign_key::rules::{
    acts, check_reference, key_exists, key_values, referencing_rows, still_referenced,
};
use crate::dml::upsert::{Arbiters, UniqueConstraint};
use sqlparser::ast;
use std::collections::HashMap;
use std::sync::Arc;
use tern_exec::catalog::ReferentialAction;
use tern_exec::catalog::objects::{Event, Timing};
use tern_exec::catalog::{Catalog, Identity, IndexDef, TableDef};
use tern_exec::codec::{encode_key, encode_row, object_prefix};
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::exec::{Env, Executor};
use tern_exec::plan::{Expr, Plan, Row};
use tern_exec::value::Value;

/// What to do when a row conflicts with an existing one on a unique key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnConflict {
    Fail,
    Ignore,
    Replace,
}

/// The result of a DML statement: rows changed and RETURNING rows.
pub struct DmlResult {
    pub changed: u64,
    pub returning: Option<(Vec<OutputColumn>, Vec<Row>)>,
}

/// A bound INSERT, UPDATE or DELETE.
pub enum DmlPlan {
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    /// A statement on a view, done by its INSTEAD OF triggers.
    InsteadOf(crate::dml::trigger::instead::InsteadPlan),
}

/// The table a statement writes, with what every write needs: its indexes and bound CHECKs.
pub struct Target {
    table: Arc<TableDef>,
    indexes: Vec<Arc<IndexDef>>,
    checks: Vec<Expr>,
    /// Each column's DEFAULT, bound once with the plan; one that does not bind fails only the
    /// INSERT that needs it.
    defaults: Vec<Result<Option<Expr>>>,
    /// The foreign keys writes to the table meet (checked when the session enforces them).
    rules: Rules,
}

impl Target {
    fn bind(catalog: &Catalog, table: Arc<TableDef>, dialect: Dialect) -> Result<Target> {
        let indexes = catalog.table_indexes(&table.name);
        let mut binder = Binder::new(catalog).with_dialect(dialect);
        let scope = Scope::new(table_scope(&table, None), None);
        let mut checks = Vec::new();
        for check in &table.checks {
            let expr = crate::bind::parse_expr(check)?;
            checks.push(binder.bind_expr(&expr, &scope)?);
        }
        let defaults = table
            .columns
            .iter()
            .map(|column| column.default.as_deref().map(crate::bind::bind_standalone_expr).transpose())
            .collect();
        let rules = Rules::resolve(catalog, &table);
        Ok(Target { table, indexes, checks, defaults, rules })
    }

    /// The value a column gets when an INSERT does not give one.
    fn default_value(&self, exec: &Executor, column: usize) -> Result<Value> {
        match &self.defaults[column] {
            Err(error) => Err(error.clone()),
            Ok(None) => Ok(Value::Null),
            Ok(Some(expr)) => exec.default_value(&self.table, column, expr),
        }
    }
}

/// RETURNING: output columns and their expressions over the written row.
type Returning = (Vec<OutputColumn>, Vec<Expr>);

pub struct InsertPlan {
    target: Target,
    /// Table column of each source column.
    positions: Vec<usize>,
    /// The rows to insert (`None`: DEFAULT VALUES).
    source: Option<Plan>,
    on_conflict: OnConflict,
    /// `ON CONFLICT [target] DO ...`: the constraints whose conflicts take its action.
    arbiters: Option<Arbiters>,
    do_update: Option<DoUpdate>,
    returning: Option<Returning>,
}

pub struct UpdatePlan {
    target: Target,
    scan: Plan,
    assignments: Vec<(usize, Expr)>,
    on_conflict: OnConflict,
    returning: Option<Returning>,
    /// Set when the update runs as a delta on one row (`crate::dml::delta`).
    delta: Option<crate::dml::delta::DeltaPlan>,
}

pub struct DeletePlan {
    target: Target,
    scan: Plan,
    returning: Option<Returning>,
}

impl DmlPlan {
    /// The RETURNING columns' names and types, noting the types of parameters on the way
    /// (a value inserted into or assigned to a column takes the column's type).
    pub(crate) fn describe(
        &self,
        inference: &mut crate::session::describe::Inference,
    ) -> Vec<(String, crate::session::describe::SqlType)> {
        use crate::session::describe::SqlType;
        let (target, returning) = match self {
            DmlPlan::Insert(insert) => {
                if let Some(Plan::Values { rows, .. }) = &insert.source {
                    for row in rows {
                        for (expr, &column) in row.iter().zip(&insert.positions) {
                            inference.expect(expr, &[], column_type(&insert.target.table, column));
                        }
                    }
                } else if let Some(source) = &insert.source {
                    inference.plan(source);
                }
                let types = table_types(&insert.target.table);
                if let Some((assignments, filter)) = &insert.do_update {
                    // DO UPDATE sees the existing row followed by the excluded one.
                    let both: Vec<SqlType> = types.iter().chain(&types).cloned().collect();
                    for (column, expr) in assignments {
                        inference.expect(expr, &both, column_type(&insert.target.table, *column));
                    }
                    if let Some(filter) = filter {
                        inference.expr(filter, &both);
                    }
                }
                (&insert.target, &insert.returning)
            }
            DmlPlan::Update(update) => {
                let types = inference.plan(&update.scan);
                for (column, expr) in &update.assignments {
                    inference.expect(expr, &types, column_type(&update.target.table, *column));
                }
                (&update.target, &update.returning)
            }
            DmlPlan::Delete(delete) => {
                inference.plan(&delete.scan);
                (&delete.target, &delete.returning)
            }
            DmlPlan::InsteadOf(_) => return Vec::new(),
        };
        let Some((columns, exprs)) = returning else { return Vec::new() };
        let types = table_types(&target.table);
        columns.iter().zip(exprs).map(|(column, expr)| (column.name.clone(), inference.expr(expr, &types))).collect()
    }
}

fn table_types(table: &TableDef) -> Vec<crate::session::describe::SqlType> {
    (0..table.columns.len()).map(|column| column_type(table, column)).collect()
}

pub(crate) fn column_type(table: &TableDef, column: usize) -> crate::session::describe::SqlType {
    match table.columns.get(column) {
        Some(tern_exec::catalog::ColumnDef { affinity: tern_exec::value::Affinity::Enum(id), .. }) => {
            crate::session::describe::SqlType::Enum(*id)
        }
        Some(tern_exec::catalog::ColumnDef { affinity: tern_exec::value::Affinity::Composite(id), .. }) => {
            crate::session::describe::SqlType::Composite(*id)
        }
        Some(def) if !def.declared_type.is_empty() => {
            crate::session::describe::SqlType::Declared(def.declared_type.clone())
        }
        _ => crate::session::describe::SqlType::Unknown,
    }
}

/// Binds an INSERT, UPDATE or DELETE; `None` for other statements.
pub fn bind(catalog: &Catalog, statement: &ast::Statement, dialect: Dialect) -> Result<Option<DmlPlan>> {
    if let Some(plan) = crate::dml::trigger::instead::bind(catalog, statement, dialect)? {
        return Ok(Some(DmlPlan::InsteadOf(plan)));
    }
    Ok(Some(match statement {
        ast::Statement::Insert(insert) => DmlPlan::Insert(bind_insert(catalog, insert, dialect)?),
        ast::Statement::Update { .. } => DmlPlan::Update(bind_update(catalog, statement, dialect)?),
        ast::Statement::Delete(delete) => DmlPlan::Delete(bind_delete(catalog, delete, dialect)?),
        _ => return Ok(None),
    }))
}

/// Runs a bound statement inside the executor's transaction.
pub fn execute(plan: &DmlPlan, exec: &Executor) -> Result<DmlResult> {
    use tern_exec::catalog::live::Change;
    let counted = |result: Result<DmlResult>, table: &TableDef, change: Change| {
        if let Ok(done) = &result {
            exec.host().count_change(table.id, change, done.changed);
        }
        result
    };
    match plan {
        DmlPlan::Insert(plan) => counted(insert(plan, exec), &plan.target.table, Change::Inserted),
        DmlPlan::Update(plan) => counted(update(plan, exec), &plan.target.table, Change::Updated),
        DmlPlan::Delete(plan) => counted(delete(plan, exec), &plan.target.table, Change::Deleted),
        DmlPlan::InsteadOf(plan) => {
            Ok(DmlResult { changed: crate::dml::trigger::instead::execute(plan, exec)?, returning: None })
        }
    }
}

struct TableWriter<'a, 't> {
    exec: &'a Executor<'t>,
    table: &'a Arc<TableDef>,
    indexes: &'a [Arc<IndexDef>],
    checks: &'a [Expr],
    next_rowid: Option<i64>,
    /// Rows OR REPLACE deleted, for their foreign keys' actions ([`TableWriter::take_replaced`]).
    replaced: std::cell::RefCell<Vec<Row>>,
    /// Whether a replaced row must be read first (enforced foreign keys reference the table).
    replaced_rows_matter: bool,
}

fn table_scope(table: &TableDef, alias: Option<&str>) -> Vec<ScopeColumn> {
    crate::bind::table_columns(table, &alias.map_or_else(|| table.name.to_ascii_lowercase(), str::to_string))
}

impl<'a, 't> TableWriter<'a, 't> {
    fn new(exec: &'a Executor<'t>, target: &'a Target) -> TableWriter<'a, 't> {
        TableWriter {
            exec,
            table: &target.table,
            indexes: &target.indexes,
            checks: &target.checks,
            next_rowid: None,
            replaced: std::cell::RefCell::default(),
            replaced_rows_matter: exec.foreign_keys_enforced() && !target.rules.incoming.is_empty(),
        }
    }

    /// Whether the table has triggers (then each row goes through [`TableWriter::fire`]).
    fn triggered(&self) -> bool {
        self.exec.catalog().is_some_and(|catalog| crate::dml::trigger::fire::has_triggers(catalog, &self.table.name))
    }

    /// Fires the table's triggers for one row; false when `RAISE(IGNORE)` skips it. A trigger
    /// may have written this table: the next row id is read again.
    fn fire(
        &mut self,
        timing: Timing,
        event: Event,
        old: Option<&[Value]>,
        new: Option<&[Value]>,
        assigned: &[usize],
    ) -> Result<bool> {
        let change = crate::dml::trigger::fire::RowChange { old, new, assigned };
        // What the triggers insert does not change the statement's last inserted row id.
        let rowid = self.exec.inserted_rowid();
        let proceed = crate::dml::trigger::fire::fire(self.exec, self.table, timing, event, &change);
        self.exec.restore_inserted_rowid(rowid);
        self.next_rowid = None;
        proceed
    }

    /// The rows OR REPLACE deleted since the last call.
    fn take_replaced(&self) -> Vec<Row> {
        std::mem::take(&mut *self.replaced.borrow_mut())
    }

    fn column_label(&self, column: usize) -> String {
        format!("{}.{}", self.table.name, self.table.columns[column].name)
    }

    /// Applies affinities and checks NOT NULL and CHECK constraints.
    fn validate(&self, row: &mut Row) -> Result<()> {
        for (index, column) in self.table.columns.iter().enumerate() {
            let value = std::mem::replace(&mut row[index], Value::Null);
            // A NULL row id alias gets a row id.
            let not_null = column.not_null && self.table.rowid_alias != Some(index);
            row[index] = column.affinity.store_in_column(value, not_null, &|| self.column_label(index))?;
        }
        if let Some(alias) = self.table.rowid_alias
            && !matches!(row[alias], Value::Integer(_) | Value::Null)
        {
            return Err(Error::datatype_mismatch(format!(
                "datatype mismatch: {} must be an integer",
                self.column_label(alias)
            )));
        }
        for (check, text) in self.checks.iter().zip(&self.table.checks) {
            if self.exec.eval(check, &Env::new(row, None))?.truth() == Some(false) {
                return Err(Error::check_violation(format!("CHECK constraint failed: {text}")));
            }
        }
        Ok(())
    }

    /// The row id a new row gets: one more than the largest stored or written so far. It is
    /// taken only when the row is written ([`TableWriter::write_row`]), so a row skipped by OR
    /// IGNORE does not use one up (SQLite).
    fn next_rowid(&mut self) -> Result<i64> {
        // Hidden row ids come from the database's counter: concurrent inserts then neither
        // collide nor depend on each other (no read of the table's last key).
        if self.table.has_hidden_rowid()
            && let Some(rowid) = self.exec.allocate_rowid(self.table)?
        {
            return Ok(rowid);
        }
        if let Some(next) = self.next_rowid {
            return Ok(next);
        }
        let next = match self.exec.last_rowid(self.table)? {
            Some(last) => {
                last.checked_add(1).ok_or_else(|| Error::new("13000", "database or disk is full: no row id left"))?
            }
            None => 1,
        };
        self.next_rowid = Some(next);
        Ok(next)
    }

    /// The row id of a row stored under `key`, if the table is keyed by one.
    fn rowid_of(&self, key: &[u8], row: &[Value]) -> Option<i64> {
        if self.table.has_hidden_rowid() {
            tern_exec::codec::decode_integer_key(&key[object_prefix(self.table.id).len()..])
        } else {
            match self.table.rowid_alias.map(|alias| &row[alias]) {
                Some(Value::Integer(rowid)) => Some(*rowid),
                _ => None,
            }
        }
    }

    /// Keeps the next row id above a row id just written.
    fn note_rowid(&mut self, key: &[u8], row: &[Value]) {
        let rowid = self.rowid_of(key, row);
        if let (Some(rowid), Some(next)) = (rowid, self.next_rowid)
            && rowid >= next
        {
            self.next_rowid = Some(rowid.saturating_add(1));
        }
    }

    /// The row's key; assigns a row id to a new row of a row-id table.
    fn key_for_new_row(&mut self, row: &mut Row) -> Result<Vec<u8>> {
        let prefix = object_prefix(self.table.id);
        if self.table.has_hidden_rowid() {
            let rowid = self.next_rowid()?;
            return Ok(encode_key(&prefix, &[Value::Integer(rowid)]));
        }
        if let Some(alias) = self.table.rowid_alias
            && row[alias].is_null()
        {
            row[alias] = Value::Integer(self.next_rowid()?);
        }
        Ok(self.key_of(row))
    }

    fn key_of(&self, row: &[Value]) -> Vec<u8> {
        let prefix = object_prefix(self.table.id);
        tern_exec::codec::encode_key_of(&prefix, self.table.primary_key.iter().map(|&column| &row[column]))
    }

    fn read_row(&self, key: &[u8]) -> Result<Option<Row>> {
        match self.exec.get(key)? {
            Some(bytes) => {
                let mut row = tern_exec::codec::decode_row(&bytes)?;
                while row.len() < self.table.columns.len() {
                    row.push(self.exec.fill_value(self.table, row.len())?);
                }
                Ok(Some(row))
            }
            None => Ok(None),
        }
    }

    fn primary_key_label(&self) -> String {
        let names: Vec<String> = self.table.primary_key.iter().map(|&column| self.column_label(column)).collect();
        names.join(", ")
    }

    /// The key of a stored row that conflicts with `row` (to be stored under `key`), if any:
    /// first on the primary key, then on each unique index.
    /// Only the constraints `among` covers are looked at.
    fn find_conflict(
        &self,
        key: &[u8],
        row: &[Value],
        check_primary: bool,
        among: &Arbiters,
    ) -> Result<Option<(Vec<u8>, String)>> {
        if check_primary
            && !self.table.has_hidden_rowid()
            && among.covers(UniqueConstraint::PrimaryKey)
            && self.exec.get(key)?.is_some()
        {
            return Ok(Some((key.to_vec(), self.primary_key_label())));
        }
        for index in self.indexes {
            if !among.covers(UniqueConstraint::Index(index.id)) {
                continue;
            }
            let (entry, unique) = self.exec.index_entry(index, self.table, row, key);
            if !unique {
                continue;
            }
            if let Some(other) = self.exec.get(&entry)?
                && other != key
            {
                let names: Vec<String> = index.columns.iter().map(|&column| self.column_label(column)).collect();
                return Ok(Some((other, names.join(", "))));
            }
        }
        Ok(None)
    }

    fn write_row(&mut self, key: &[u8], row: &[Value]) {
        self.note_rowid(key, row);
        self.exec.put(key.to_vec(), encode_row(row));
        for index in self.indexes {
            let (entry, _) = self.exec.index_entry(index, self.table, row, key);
            self.exec.put(entry, key.to_vec());
        }
    }

    fn delete_row(&self, key: &[u8], row: &[Value]) {
        self.exec.delete(key.to_vec());
        for index in self.indexes {
            let (entry, _) = self.exec.index_entry(index, self.table, row, key);
            self.exec.delete(entry);
        }
    }

    /// Resolves conflicts for a row about to be stored under `key`. Returns false when the
    /// row must be skipped (IGNORE).
    fn resolve_conflicts(
        &self,
        key: &[u8],
        row: &[Value],
        on_conflict: OnConflict,
        check_primary: bool,
    ) -> Result<bool> {
        if matches!(on_conflict, OnConflict::Replace) && self.indexes.is_empty() && !self.replaced_rows_matter {
            // Without a secondary index, replacing the row under `key` is overwriting the key:
            // a blind write, no read (SQLiteKV's PUT on the LSM tree).
            return Ok(true);
        }
        loop {
            match self.find_conflict(key, row, check_primary, &Arbiters::default())? {
                None => return Ok(true),
                Some((other_key, label)) => match on_conflict {
                    OnConflict::Fail => {
                        return Err(Error::unique_violation(format!("UNIQUE constraint failed: {label}")));
                    }
                    OnConflict::Ignore => return Ok(false),
                    OnConflict::Replace => {
                        let other = self.read_row(&other_key)?.ok_or_else(|| {
                            Error::corrupt(format!("an index of {} points to a missing row", self.table.name))
                        })?;
                        self.delete_row(&other_key, &other);
                        self.replaced.borrow_mut().push(other);
                    }
                },
            }
        }
    }
}

/// ON CONFLICT DO UPDATE: the assignments (column, value) and the optional WHERE.
type DoUpdate = (Vec<(usize, Expr)>, Option<Expr>);

fn conflict_of(or: &Option<ast::SqliteOnConflict>) -> Result<OnConflict> {
    Ok(match or {
        None
        | Some(ast::SqliteOnConflict::Abort)
        | Some(ast::SqliteOnConflict::Fail)
        | Some(ast::SqliteOnConflict::Rollback) => OnConflict::Fail,
        Some(ast::SqliteOnConflict::Ignore) => OnConflict::Ignore,
        Some(ast::SqliteOnConflict::Replace) => OnConflict::Replace,
    })
}

fn bind_returning(
    binder: &mut Binder,
    table: &TableDef,
    alias: Option<&str>,
    items: &Option<Vec<ast::SelectItem>>,
) -> Result<Option<Returning>> {
    let Some(items) = items else { return Ok(None) };
    let scope = Scope::new(table_scope(table, alias), None);
    let mut exprs = Vec::new();
    let mut columns = Vec::new();
    for item in items {
        match item {
            ast::SelectItem::Wildcard(_) => {
                for (index, column) in table.columns.iter().enumerate() {
                    exprs.push(Expr::Column(index));
                    columns.push(OutputColumn { name: column.name.clone(), affinity: Some(column.affinity) });
                }
            }
            ast::SelectItem::UnnamedExpr(expr) => {
                exprs.push(binder.bind_expr(expr, &scope)?);
                let name = match expr {
                    ast::Expr::Identifier(ident) => ident.value.clone(),
                    other => other.to_string(),
                };
                columns.push(OutputColumn { name, affinity: None });
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                exprs.push(binder.bind_expr(expr, &scope)?);
                columns.push(OutputColumn { name: alias.value.clone(), affinity: None });
            }
            ast::SelectItem::QualifiedWildcard(..) => return Err(Error::unsupported("table.* in RETURNING")),
        }
    }
    Ok(Some((columns, exprs)))
}

fn returning(
    exec: &Executor,
    returning: &Option<Returning>,
    rows: &[Row],
) -> Result<Option<(Vec<OutputColumn>, Vec<Row>)>> {
    let Some((columns, exprs)) = returning else { return Ok(None) };
    let mut output = Vec::new();
    for row in rows {
        let env = Env::new(row, None);
        output.push(exprs.iter().map(|expr| exec.eval(expr, &env)).collect::<Result<Row>>()?);
    }
    Ok(Some((columns.clone(), output)))
}

fn target_table(catalog: &Catalog, name: &ast::ObjectName) -> Result<Arc<TableDef>> {
    let table_name = object_name(name)?;
    match catalog.table(&table_name) {
        Some(table) => Ok(table.clone()),
        None if catalog.view(&table_name).is_some() => {
            Err(Error::new("42809", format!("cannot modify {table_name} because it is a view")))
        }
        None => Err(Error::undefined_table(&table_name)),
    }
}

fn bind_insert(catalog: &Catalog, insert: &ast::Insert, dialect: Dialect) -> Result<InsertPlan> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(Error::unsupported("INSERT INTO a table function"));
    };
    let table = target_table(catalog, name)?;
    let mut binder = Binder::new(catalog).with_dialect(dialect);
    let positions: Vec<usize> = if insert.columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        let mut positions = Vec::new();
        for column in &insert.columns {
            let position = table
                .column_index(&column.value)
                .ok_or_else(|| Error::undefined_column(&format!("{}.{}", table.name, column.value)))?;
            if positions.contains(&position) {
                return Err(Error::syntax(format!("column {} given twice", column.value)));
            }
            positions.push(position);
        }
        positions
    };
    let source = match &insert.source {
        None => None, // INSERT ... DEFAULT VALUES
        Some(query) => {
            let query = defaults_in_values(&table, &positions, query, crate::dml::overriding::overrides(name))?;
            let (plan, columns) = binder.bind_query(&query, None)?;
            if columns.len() != positions.len() {
                return Err(Error::syntax(format!(
                    "table {} has {} columns but {} values were supplied",
                    table.name,
                    positions.len(),
                    columns.len()
                )));
            }
            Some(plan)
        }
    };
    let mut on_conflict = if insert.replace_into { OnConflict::Replace } else { conflict_of(&insert.or)? };
    if insert.ignore {
        on_conflict = OnConflict::Ignore;
    }
    // `INSERT INTO t AS alias`: the name the table goes by in DO UPDATE and RETURNING.
    let alias = insert.table_alias.as_ref().map(|alias| alias.value.to_ascii_lowercase());
    let (arbiters, do_update) = match &insert.on {
        None => (None, None),
        Some(ast::OnInsert::OnConflict(conflict)) => {
            let (arbiters, do_update) =
                bind_on_conflict(catalog, &mut binder, &table, alias.as_deref(), conflict, dialect)?;
            (Some(arbiters), do_update)
        }
        Some(_) => return Err(Error::unsupported("ON DUPLICATE KEY UPDATE")),
    };
    let returning = bind_returning(&mut binder, &table, alias.as_deref(), &insert.returning)?;
    Ok(InsertPlan {
        target: Target::bind(catalog, table, dialect)?,
        positions,
        source,
        on_conflict,
        arbiters,
        do_update,
        returning,
    })
}

/// `ON CONFLICT [target] DO NOTHING | DO UPDATE SET ... [WHERE ...]`: its arbiters, and for
/// DO UPDATE the assignments and condition, which see the existing row, then `excluded` (the
/// row proposed).
fn bind_on_conflict(
    catalog: &Catalog,
    binder: &mut Binder,
    table: &TableDef,
    alias: Option<&str>,
    conflict: &ast::OnConflict,
    dialect: Dialect,
) -> Result<(Arbiters, Option<DoUpdate>)> {
    let arbiters = crate::dml::upsert::bind(catalog, table, conflict, dialect)?;
    let ast::OnConflictAction::DoUpdate(update) = &conflict.action else { return Ok((arbiters, None)) };
    let mut columns = table_scope(table, alias);
    columns.extend(table_scope(table, Some("excluded")));
    let scope = Scope::new(columns, None);
    let mut assignments = Vec::new();
    for assignment in &update.assignments {
        let position = assignment_column(table, &assignment.target)?;
        assignments.push((position, binder.bind_expr(&assignment.value, &scope)?));
    }
    let selection = update.selection.as_ref().map(|selection| binder.bind_expr(selection, &scope)).transpose()?;
    Ok((arbiters, Some((assignments, selection))))
}

fn insert(plan: &InsertPlan, exec: &Executor) -> Result<DmlResult> {
    let mut inserter = Inserter::new(plan, exec);
    match &plan.source {
        None => inserter.row(Vec::new())?,
        // The source's rows go into the table as they are produced, unless it could see them:
        // a source that reads the target table, or a table with triggers (whose bodies may
        // write what the source reads), has its rows taken whole first.
        Some(source) if !inserter.triggered && !source.may_read_table(plan.target.table.id) => {
            exec.emit(source, &mut |row| inserter.row(row))?
        }
        Some(source) => {
            for row in exec.run(source, None)? {
                inserter.row(row)?;
            }
        }
    }
    inserter.finish()
}

/// One INSERT's writing, a source row at a time.
struct Inserter<'a, 't> {
    plan: &'a InsertPlan,
    exec: &'a Executor<'t>,
    writer: TableWriter<'a, 't>,
    checks: ReferenceChecks,
    triggered: bool,
    /// Rows this statement inserted or updated through DO UPDATE (by key).
    touched: std::collections::HashSet<Vec<u8>>,
    /// The source column of each table column (`None`: the column's default).
    source_of: Vec<Option<usize>>,
    /// Rows written, for RETURNING.
    inserted: Vec<Row>,
    changed: u64,
}

impl<'a, 't> Inserter<'a, 't> {
    fn new(plan: &'a InsertPlan, exec: &'a Executor<'t>) -> Inserter<'a, 't> {
        let target = &plan.target;
        let writer = TableWriter::new(exec, target);
        let triggered = writer.triggered();
        let mut source_of = vec![None; target.table.columns.len()];
        if plan.source.is_some() {
            for (at, &position) in plan.positions.iter().enumerate() {
                source_of[position] = Some(at);
            }
        }
        Inserter {
            plan,
            exec,
            writer,
            checks: ReferenceChecks::new(exec, target),
            triggered,
            touched: std::collections::HashSet::new(),
            source_of,
            inserted: Vec::new(),
            changed: 0,
        }
    }

    /// Inserts one source row (or takes its conflict's action).
    fn row(&mut self, mut source_row: Row) -> Result<()> {
        let (exec, target) = (self.exec, &self.plan.target);
        let mut row: Row = Vec::with_capacity(target.table.columns.len());
        for (column, from) in self.source_of.iter().enumerate() {
            row.push(match from {
                Some(at) => std::mem::replace(&mut source_row[*at], Value::Null),
                None => target.default_value(exec, column)?,
            });
        }
        self.writer.validate(&mut row)?;
        let key = self.writer.key_for_new_row(&mut row)?;
        if self.triggered && !self.writer.fire(Timing::Before, Event::Insert, None, Some(&row), &[])? {
            return Ok(());
        }
        let arbitrated = match &self.plan.arbiters {
            Some(arbiters) => self.writer.find_conflict(&key, &row, true, arbiters)?.map(|(other_key, _)| other_key),
            None => None,
        };
        match (arbitrated, &self.plan.do_update) {
            (Some(_), None) => Ok(()), // DO NOTHING
            (Some(other_key), Some(do_update)) => self.update_conflicting(other_key, row, do_update),
            (None, _) => self.write(key, row),
        }
    }

    /// Writes a new row, after OR REPLACE / OR IGNORE resolve its conflicts.
    fn write(&mut self, key: Vec<u8>, row: Row) -> Result<()> {
        let (exec, target) = (self.exec, &self.plan.target);
        let resolved = self.writer.resolve_conflicts(&key, &row, self.plan.on_conflict, true)?;
        for replaced in self.writer.take_replaced() {
            self.checks.removed(exec, target, &replaced, None, 0)?;
        }
        if !resolved {
            return Ok(());
        }
        self.writer.write_row(&key, &row);
        if let Some(rowid) = self.writer.rowid_of(&key, &row) {
            exec.note_inserted_rowid(rowid);
        }
        if self.plan.do_update.is_some() {
            self.touched.insert(key.clone());
        }
        self.changed += 1;
        self.checks.inserted(&row);
        if self.triggered {
            self.writer.fire(Timing::After, Event::Insert, None, Some(&row), &[])?;
        }
        if self.plan.returning.is_some() {
            self.inserted.push(row);
        }
        Ok(())
    }

    /// ON CONFLICT DO UPDATE: updates the row under `other_key`, which `row` conflicts with.
    fn update_conflicting(&mut self, other_key: Vec<u8>, row: Row, do_update: &DoUpdate) -> Result<()> {
        let (exec, target) = (self.exec, &self.plan.target);
        let (assignments, selection) = do_update;
        // A row this statement inserted or updated is not updated again (PostgreSQL),
        // whatever the DO UPDATE's WHERE says.
        if self.touched.contains(&other_key) && exec.dialect() == Dialect::Postgres {
            return Err(Error::new("21000", "ON CONFLICT DO UPDATE command cannot affect row a second time"));
        }
        let existing = self.writer.read_row(&other_key)?.ok_or_else(|| Error::corrupt("conflicting row vanished"))?;
        let mut combined = existing.clone();
        combined.extend(row.iter().cloned());
        let env = Env::new(&combined, None);
        if let Some(selection) = selection
            && exec.eval(selection, &env)?.truth() != Some(true)
        {
            return Ok(());
        }
        self.touched.insert(other_key.clone());
        let mut updated = existing.clone();
        for (position, expr) in assignments {
            updated[*position] = exec.eval(expr, &env)?;
        }
        let assigned: Vec<usize> = assignments.iter().map(|(position, _)| *position).collect();
        let mut existing = existing;
        if self.triggered {
            if !self.writer.fire(Timing::Before, Event::Update, Some(&existing), Some(&updated), &assigned)? {
                return Ok(());
            }
            // A BEFORE trigger may have changed or deleted the row (its index entries).
            let Some(current) = self.writer.read_row(&other_key)? else { return Ok(()) };
            existing = current;
        }
        if update_row(&mut self.writer, &other_key, &existing, updated, OnConflict::Fail, &mut self.inserted)?
            && let Some(new) = self.inserted.last()
        {
            self.checks.updated(exec, target, &existing, new)?;
            if self.triggered {
                let new = new.clone();
                self.writer.fire(Timing::After, Event::Update, Some(&existing), Some(&new), &assigned)?;
            }
        }
        self.changed += 1;
        Ok(())
    }

    fn finish(self) -> Result<DmlResult> {
        self.checks.finish(self.exec, &self.plan.target)?;
        let returning = returning(self.exec, &self.plan.returning, &self.inserted)?;
        Ok(DmlResult { changed: self.changed, returning })
    }
}

fn assignment_column(table: &TableDef, target: &ast::AssignmentTarget) -> Result<usize> {
    let ast::AssignmentTarget::ColumnName(name) = target else {
        return Err(Error::unsupported("tuple assignments"));
    };
    let column = match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(ident)) => lower(ident),
        _ => return Err(Error::syntax(format!("bad column {name}"))),
    };
    table.column_index(&column).ok_or_else(|| Error::undefined_column(&format!("{}.{column}", table.name)))
}

/// Replaces a stored row by `updated`, moving it if its key changed and keeping its indexes.
fn update_row(
    writer: &mut TableWriter,
    old_key: &[u8],
    old_row: &[Value],
    mut updated: Row,
    on_conflict: OnConflict,
    changed_rows: &mut Vec<Row>,
) -> Result<bool> {
    writer.validate(&mut updated)?;
    let new_key = if writer.table.has_hidden_rowid() {
        old_key.to_vec()
    } else {
        if let Some(alias) = writer.table.rowid_alias
            && updated[alias].is_null()
        {
            updated[alias] = Value::Integer(writer.next_rowid()?);
        }
        writer.key_of(&updated)
    };
    // Remove the old row first so that it does not conflict with itself.
    writer.delete_row(old_key, old_row);
    let moved = new_key != old_key;
    if !writer.resolve_conflicts(&new_key, &updated, on_conflict, moved)? {
        writer.write_row(old_key, old_row);
        return Ok(false);
    }
    writer.write_row(&new_key, &updated);
    changed_rows.push(updated);
    Ok(true)
}

/// `DEFAULT` written where a value goes.
fn is_default_keyword(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Identifier(ident) if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("default"))
}

/// What `DEFAULT` stands for in a column: its DEFAULT expression, or NULL.
fn column_default_expr(table: &TableDef, position: usize) -> Result<ast::Expr> {
    match &table.columns[position].default {
        Some(default) => crate::bind::parse_expr(default),
        None => Ok(ast::Expr::value(ast::Value::Null)),
    }
}

/// An INSERT's source with each `DEFAULT` in its VALUES replaced by the column's default, after
/// checking that a `GENERATED ALWAYS` identity column is given only `DEFAULT` (428C9) unless
/// the INSERT says `OVERRIDING SYSTEM VALUE` (`overriding`).
fn defaults_in_values(
    table: &TableDef,
    positions: &[usize],
    query: &ast::Query,
    overriding: bool,
) -> Result<ast::Query> {
    let always: Vec<usize> = (0..positions.len())
        .filter(|&at| !overriding && table.columns[positions[at]].identity == Some(Identity::Always))
        .collect();
    let refuse = |at: usize| {
        let name = &table.columns[positions[at]].name;
        Error::new(
            "428C9",
            format!("cannot insert a non-DEFAULT value into column \"{name}\": it is GENERATED ALWAYS AS IDENTITY"),
        )
    };
    let ast::SetExpr::Values(values) = query.body.as_ref() else {
        return match always.first() {
            Some(&at) => Err(refuse(at)),
            None => Ok(query.clone()),
        };
    };
    let mut query = query.clone();
    let mut values = values.clone();
    for row in &mut values.rows {
        for (at, expr) in row.iter_mut().enumerate() {
            if is_default_keyword(expr) {
                if let Some(&position) = positions.get(at) {
                    *expr = column_default_expr(table, position)?;
                }
            } else if always.contains(&at) {
                return Err(refuse(at));
            }
        }
    }
    query.body = Box::new(ast::SetExpr::Values(values));
    Ok(query)
}

/// UPDATE [OR ...] table SET ... [WHERE ...] [RETURNING ...].
fn bind_update(catalog: &Catalog, statement: &ast::Statement, dialect: Dialect) -> Result<UpdatePlan> {
    let ast::Statement::Update {
        table: table_ref,
        assignments,
        from,
        selection,
        returning: returning_items,
        or,
        limit,
    } = statement
    else {
        return Err(Error::internal("update() needs an UPDATE statement"));
    };
    if limit.is_some() {
        return Err(Error::unsupported("UPDATE ... LIMIT"));
    }
    if from.is_some() || !table_ref.joins.is_empty() {
        return Err(Error::unsupported("UPDATE ... FROM"));
    }
    let ast::TableFactor::Table { name, .. } = &table_ref.relation else {
        return Err(Error::unsupported("UPDATE of a derived table"));
    };
    let table = target_table(catalog, name)?;
    let mut binder = Binder::new(catalog).with_dialect(dialect);
    let (plan, scope) = binder.bind_table_scan(&table, selection.as_ref())?;
    let mut bound = Vec::new();
    for assignment in assignments {
        let position = assignment_column(&table, &assignment.target)?;
        let value = if is_default_keyword(&assignment.value) {
            column_default_expr(&table, position)?
        } else {
            if table.columns[position].identity == Some(Identity::Always) {
                return Err(Error::new(
                    "428C9",
                    format!("column \"{}\" can only be updated to DEFAULT", table.columns[position].name),
                ));
            }
            assignment.value.clone()
        };
        bound.push((position, binder.bind_expr(&value, &scope)?));
    }
    let on_conflict = conflict_of(or)?;
    let returning = bind_returning(&mut binder, &table, None, returning_items)?;
    let target = Target::bind(catalog, table, dialect)?;
    let triggered = crate::dml::trigger::fire::has_triggers(catalog, &target.table.name);
    let delta = match (&plan, or, &returning) {
        (Plan::Scan { filter, .. }, None, None) if !triggered => {
            let mut conjuncts = Vec::new();
            if let Some(filter) = filter {
                crate::bind::split_conjuncts(filter.clone(), &mut conjuncts);
            }
            crate::dml::delta::plan(&target.table, &target.indexes, &conjuncts, &bound, &target.rules.columns())
        }
        _ => None,
    };
    Ok(UpdatePlan { target, scan: plan, assignments: bound, on_conflict, returning, delta })
}

fn update(plan: &UpdatePlan, exec: &Executor) -> Result<DmlResult> {
    if let Some(delta) = &plan.delta {
        return Ok(DmlResult { changed: crate::dml::delta::execute(delta, exec)?, returning: None });
    }
    let rows = exec.scan_rows_with_keys(&plan.scan)?;
    let mut writer = TableWriter::new(exec, &plan.target);
    let mut checks = ReferenceChecks::new(exec, &plan.target);
    let mut changed_rows = Vec::new();
    let mut changed = 0;
    let triggered = writer.triggered();
    let assigned: Vec<usize> = plan.assignments.iter().map(|(position, _)| *position).collect();
    for (key, _) in rows {
        // OR REPLACE may have deleted or moved a later target row: use what is stored now.
        let Some(mut row) = writer.read_row(&key)? else { continue };
        let assign = |row: &Row| -> Result<Row> {
            let env = Env::new(row, None);
            let mut updated = row.clone();
            for (position, expr) in &plan.assignments {
                updated[*position] = exec.eval(expr, &env)?;
            }
            Ok(updated)
        };
        let mut updated = assign(&row)?;
        if triggered {
            if !writer.fire(Timing::Before, Event::Update, Some(&row), Some(&updated), &assigned)? {
                continue;
            }
            // A BEFORE trigger may have changed or deleted the row: update what is stored now
            // (its index entries are the ones to replace).
            let Some(current) = writer.read_row(&key)? else { continue };
            if current != row {
                updated = assign(&current)?;
                row = current;
            }
        }
        let written = update_row(&mut writer, &key, &row, updated, plan.on_conflict, &mut changed_rows)?;
        for replaced in writer.take_replaced() {
            checks.removed(exec, &plan.target, &replaced, None, 0)?;
        }
        if written {
            changed += 1;
            if let Some(new) = changed_rows.last() {
                checks.updated(exec, &plan.target, &row, new)?;
                if triggered {
                    let new = new.clone();
                    writer.fire(Timing::After, Event::Update, Some(&row), Some(&new), &assigned)?;
                }
            }
        }
    }
    checks.finish(exec, &plan.target)?;
    let returning = returning(exec, &plan.returning, &changed_rows)?;
    Ok(DmlResult { changed, returning })
}

fn bind_delete(catalog: &Catalog, delete: &ast::Delete, dialect: Dialect) -> Result<DeletePlan> {
    if delete.using.is_some() || delete.limit.is_some() || !delete.order_by.is_empty() {
        return Err(Error::unsupported("DELETE with USING, ORDER BY or LIMIT"));
    }
    let tables = match &delete.from {
        ast::FromTable::WithFromKeyword(tables) | ast::FromTable::WithoutKeyword(tables) => tables,
    };
    let [table_ref] = tables.as_slice() else {
        return Err(Error::unsupported("DELETE from several tables"));
    };
    let ast::TableFactor::Table { name, .. } = &table_ref.relation else {
        return Err(Error::unsupported("DELETE from a derived table"));
    };
    let table = target_table(catalog, name)?;
    let mut binder = Binder::new(catalog).with_dialect(dialect);
    let (scan, _) = binder.bind_table_scan(&table, delete.selection.as_ref())?;
    let returning = bind_returning(&mut binder, &table, None, &delete.returning)?;
    Ok(DeletePlan { target: Target::bind(catalog, table, dialect)?, scan, returning })
}

fn delete(plan: &DeletePlan, exec: &Executor) -> Result<DmlResult> {
    let rows = exec.scan_rows_with_keys(&plan.scan)?;
    let mut writer = TableWriter::new(exec, &plan.target);
    let mut checks = ReferenceChecks::new(exec, &plan.target);
    let mut deleted = Vec::with_capacity(rows.len());
    let triggered = writer.triggered();
    for (key, row) in rows {
        // An action of this statement (a self-referencing SET NULL, say) or a trigger may have
        // changed or removed the row since the scan.
        let row = if checks.enforced || triggered {
            match writer.read_row(&key)? {
                Some(row) => row,
                None => continue,
            }
        } else {
            row
        };
        let row = if triggered {
            if !writer.fire(Timing::Before, Event::Delete, Some(&row), None, &[])? {
                continue;
            }
            // A BEFORE trigger may have changed or deleted the row.
            match writer.read_row(&key)? {
                Some(current) => current,
                None => continue,
            }
        } else {
            row
        };
        writer.delete_row(&key, &row);
        checks.removed(exec, &plan.target, &row, None, 0)?;
        if triggered {
            writer.fire(Timing::After, Event::Delete, Some(&row), None, &[])?;
        }
        deleted.push(row);
    }
    checks.finish(exec, &plan.target)?;
    let returning = returning(exec, &plan.returning, &deleted)?;
    Ok(DmlResult { changed: deleted.len() as u64, returning })
}

/// Inserts the rows of `query`, full rows of `table` (in column order), as INSERT does:
/// converted to the columns' types, checked, keyed and indexed (CREATE TABLE AS, whose
/// `table` is new). The count of rows.
pub fn fill_new_table(catalog: &Catalog, exec: &Executor, table: &Arc<TableDef>, query: &Plan) -> Result<u64> {
    let target = Target::bind(catalog, table.clone(), exec.dialect())?;
    let mut writer = TableWriter::new(exec, &target);
    let mut checks = ReferenceChecks::new(exec, &target);
    let mut count = 0;
    // The query cannot read the new table (it was bound before the table was made), so its
    // rows go in as they are produced.
    exec.emit(query, &mut |mut row| {
        writer.validate(&mut row)?;
        let key = writer.key_for_new_row(&mut row)?;
        writer.write_row(&key, &row);
        checks.inserted(&row);
        count += 1;
        Ok(())
    })?;
    checks.finish(exec, &target)?;
    Ok(count)
}

/// A change MERGE decided for its target ([`crate::dml::merge`]).
pub enum RowAction {
    /// A new row: a value per column, `None` for the column's default.
    Insert(Vec<Option<Value>>),
    /// The row under `key` gets `new`; `assigned` are the columns the SET named.
    Update {
        key: Vec<u8>,
        new: Row,
        assigned: Vec<usize>,
    },
    Delete {
        key: Vec<u8>,
    },
}

/// Applies MERGE's changes in order, with everything INSERT, UPDATE and DELETE check: types,
/// NOT NULL, CHECK, unique keys (23505), foreign keys and triggers. The count of rows changed.
pub fn apply_row_actions(
    catalog: &Catalog,
    exec: &Executor,
    table: &Arc<TableDef>,
    actions: Vec<RowAction>,
) -> Result<u64> {
    let target = Target::bind(catalog, table.clone(), exec.dialect())?;
    let mut writer = TableWriter::new(exec, &target);
    let mut checks = ReferenceChecks::new(exec, &target);
    let triggered = writer.triggered();
    let mut changed_rows = Vec::new();
    let mut count = 0;
    for action in actions {
        match action {
            RowAction::Insert(values) => {
                let mut row = Vec::with_capacity(values.len());
                for (column, value) in values.into_iter().enumerate() {
                    row.push(match value {
                        Some(value) => value,
                        None => target.default_value(exec, column)?,
                    });
                }
                writer.validate(&mut row)?;
                let key = writer.key_for_new_row(&mut row)?;
                if triggered && !writer.fire(Timing::Before, Event::Insert, None, Some(&row), &[])? {
                    continue;
                }
                writer.resolve_conflicts(&key, &row, OnConflict::Fail, true)?;
                writer.write_row(&key, &row);
                if let Some(rowid) = writer.rowid_of(&key, &row) {
                    exec.note_inserted_rowid(rowid);
                }
                checks.inserted(&row);
                if triggered {
                    writer.fire(Timing::After, Event::Insert, None, Some(&row), &[])?;
                }
            }
            RowAction::Update { key, new, assigned } => {
                let Some(mut old) = writer.read_row(&key)? else { continue };
                if triggered {
                    if !writer.fire(Timing::Before, Event::Update, Some(&old), Some(&new), &assigned)? {
                        continue;
                    }
                    let Some(current) = writer.read_row(&key)? else { continue };
                    old = current;
                }
                if !update_row(&mut writer, &key, &old, new, OnConflict::Fail, &mut changed_rows)? {
                    continue;
                }
                let new = changed_rows.last().cloned().unwrap_or_default();
                checks.updated(exec, &target, &old, &new)?;
                if triggered {
                    writer.fire(Timing::After, Event::Update, Some(&old), Some(&new), &assigned)?;
                }
            }
            RowAction::Delete { key } => {
                let Some(mut old) = writer.read_row(&key)? else { continue };
                if triggered {
                    if !writer.fire(Timing::Before, Event::Delete, Some(&old), None, &[])? {
                        continue;
                    }
                    let Some(current) = writer.read_row(&key)? else { continue };
                    old = current;
                }
                writer.delete_row(&key, &old);
                checks.removed(exec, &target, &old, None, 0)?;
                if triggered {
                    writer.fire(Timing::After, Event::Delete, Some(&old), None, &[])?;
                }
            }
        }
        count += 1;
    }
    checks.finish(exec, &target)?;
    Ok(count)
}

/// Most rows one foreign key action may reach through others (SQLite's limit of nested
/// actions).
const MAX_CASCADE_DEPTH: usize = 1000;

/// The foreign key work of one statement on one table, when the session enforces foreign keys.
/// Rows the statement writes are checked when it has written them all (a row may reference one
/// written after it, as in PostgreSQL); NO ACTION (and, in the postgres dialect, RESTRICT) is
/// checked then too (a key removed and written again by the statement is fine, and so is a key
/// whose referencing rows the statement also removed). CASCADE, SET NULL and SET DEFAULT act at
/// once; what they do to other tables is checked with the rest, when the statement ends.
struct ReferenceChecks {
    enforced: bool,
    /// Rows written, with what they replaced (`None`: new rows): their changed references are
    /// checked at the end.
    written: Vec<(Row, Option<Row>)>,
    /// (index into the table's incoming rules, the removed row): deferred checks.
    removed: Vec<(usize, Row)>,
    /// The tables actions reached, by incoming rule: their targets and their own checks.
    children: HashMap<usize, (Target, ReferenceChecks)>,
}

impl ReferenceChecks {
    fn new(exec: &Executor, target: &Target) -> ReferenceChecks {
        let enforced = exec.foreign_keys_enforced() && !target.rules.is_empty();
        ReferenceChecks { enforced, written: Vec::new(), removed: Vec::new(), children: HashMap::new() }
    }

    /// A new row: its references are checked at the end.
    fn inserted(&mut self, row: &[Value]) {
        if self.enforced {
            self.written.push((row.to_vec(), None));
        }
    }

    /// A row changed from `old` to `new`: its changed references are checked at the end, and the
    /// rows referencing it follow if its referenced key changed.
    fn updated(&mut self, exec: &Executor, target: &Target, old: &[Value], new: &[Value]) -> Result<()> {
        if !self.enforced {
            return Ok(());
        }
        self.written.push((new.to_vec(), Some(old.to_vec())));
        self.removed(exec, target, old, Some(new), 0)
    }

    /// A row removed (`new` None) or changed: each foreign key referencing its old key acts.
    fn removed(
        &mut self,
        exec: &Executor,
        target: &Target,
        old: &[Value],
        new: Option<&[Value]>,
        depth: usize,
    ) -> Result<()> {
        if !self.enforced {
            return Ok(());
        }
        // Rows replaced by OR REPLACE are not written any more.
        self.written.retain(|(row, _)| row.as_slice() != old || new.is_some());
        for (at, fk) in target.rules.incoming.iter().enumerate() {
            if let Some(broken) = &fk.broken {
                return Err(Error::new("42830", broken.clone()));
            }
            if let Some(new) = new
                && fk.parent_columns.iter().all(|&column| old[column] == new[column])
            {
                continue;
            }
            let action = if new.is_some() { fk.def.on_update } else { fk.def.on_delete };
            let deferred = action == ReferentialAction::NoAction
                || (action == ReferentialAction::Restrict && exec.dialect() == Dialect::Postgres);
            if deferred {
                self.removed.push((at, old.to_vec()));
                continue;
            }
            let rows = referencing_rows(exec, fk, &target.table, old)?;
            if rows.is_empty() {
                continue;
            }
            if !acts(action) {
                return Err(still_referenced(&target.table, fk));
            }
            if depth >= MAX_CASCADE_DEPTH {
                return Err(Error::program_limit("foreign key actions reach through too many rows"));
            }
            let (child, child_checks) = match self.children.entry(at) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => {
                    let catalog =
                        exec.catalog().ok_or_else(|| Error::internal("foreign key actions without a catalog"))?;
                    let child = Target::bind(catalog, fk.child.clone(), exec.dialect())?;
                    let checks = ReferenceChecks::new(exec, &child);
                    entry.insert((child, checks))
                }
            };
            tern_exec::limits::with_stack(|| act(exec, fk, action, new, child, child_checks, rows, depth))?;
        }
        Ok(())
    }

    /// The checks left for the end of the statement, the tables actions reached first.
    fn finish(self, exec: &Executor, target: &Target) -> Result<()> {
        if !self.enforced {
            return Ok(());
        }
        for (_, (child, checks)) in self.children {
            tern_exec::limits::with_stack(|| checks.finish(exec, &child))?;
        }
        for (at, old) in &self.removed {
            let fk = &target.rules.incoming[*at];
            let Some(values) = key_values(old, &fk.parent_columns) else { continue };
            if !referencing_rows(exec, fk, &target.table, old)?.is_empty()
                && !key_exists(exec, &target.table, &fk.parent_columns, values)?
            {
                return Err(still_referenced(&target.table, fk));
            }
        }
        for (row, old) in &self.written {
            for fk in &target.rules.outgoing {
                // Only references the statement changed are checked (as in SQLite and PostgreSQL).
                if let Some(old) = old
                    && fk.columns.iter().all(|&column| old[column] == row[column])
                {
                    continue;
                }
                check_reference(exec, &target.table, fk, row)?;
            }
        }
        Ok(())
    }
}

/// Carries out `action` on the rows of `child` that reference a removed (`new` None) or changed
/// row of the parent.
#[allow(clippy::too_many_arguments)]
fn act(
    exec: &Executor,
    fk: &crate::dml::foreign_key::rules::Incoming,
    action: ReferentialAction,
    new: Option<&[Value]>,
    child: &Target,
    child_checks: &mut ReferenceChecks,
    rows: Vec<(Vec<u8>, Row)>,
    depth: usize,
) -> Result<()> {
    let mut writer = TableWriter::new(exec, child);
    for (key, _) in rows {
        // An earlier action of this statement may have changed or removed the row.
        let Some(row) = writer.read_row(&key)? else { continue };
        let mut updated = row.clone();
        match (action, new) {
            (ReferentialAction::Cascade, None) => {
                writer.delete_row(&key, &row);
                child_checks.removed(exec, child, &row, None, depth + 1)?;
                continue;
            }
            (ReferentialAction::Cascade, Some(new)) => {
                for (&column, &parent_column) in fk.columns.iter().zip(&fk.parent_columns) {
                    updated[column] = new[parent_column].clone();
                }
            }
            (ReferentialAction::SetNull, _) => {
                for &column in &fk.columns {
                    updated[column] = Value::Null;
                }
            }
            _ => {
                for &column in &fk.columns {
                    updated[column] = child.default_value(exec, column)?;
                }
            }
        }
        let mut changed = Vec::new();
        if update_row(&mut writer, &key, &row, updated, OnConflict::Fail, &mut changed)?
            && let Some(new_row) = changed.last()
        {
            child_checks.written.push((new_row.clone(), Some(row.clone())));
            child_checks.removed(exec, child, &row, Some(new_row), depth + 1)?;
        }
    }
    Ok(())
}

/// Writes index entries for every existing row of a table (CREATE INDEX), failing on
/// duplicates of a unique index.
pub fn build_index(catalog: &Catalog, exec: &Executor, table: &Arc<TableDef>, index: &IndexDef) -> Result<()> {
    build_key_index(catalog, exec, table, index, false)
}

/// Builds an index's entries; with `not_null`, a row with NULL in an index column fails
/// (a primary key added to an existing table).
pub fn build_key_index(
    catalog: &Catalog,
    exec: &Executor,
    table: &Arc<TableDef>,
    index: &IndexDef,
    not_null: bool,
) -> Result<()> {
    let mut binder = Binder::new(catalog);
    let (plan, _) = binder.bind_table_scan(table, None)?;
    for (key, row) in exec.scan_rows_with_keys(&plan)? {
        if not_null && let Some(&column) = index.columns.iter().find(|&&column| row[column].is_null()) {
            return Err(Error::not_null_violation(format!(
                "column {} of table {} contains null values",
                table.columns[column].name, table.name
            )));
        }
        let (entry, unique) = exec.index_entry(index, table, &row, &key);
        if unique && exec.get(&entry)?.is_some() {
            let names: Vec<String> =
                index.columns.iter().map(|&column| format!("{}.{}", table.name, table.columns[column].name)).collect();
            return Err(Error::unique_violation(format!("UNIQUE constraint failed: {}", names.join(", "))));
        }
        exec.put(entry, key);
    }
    Ok(())
}

/// Deletes every row and index entry of a table (DROP TABLE, TRUNCATE).
pub fn clear_table(catalog: &Catalog, exec: &Executor, table: &TableDef) -> Result<()> {
    let mut prefixes = vec![object_prefix(table.id)];
    for index in catalog.table_indexes(&table.name) {
        prefixes.push(object_prefix(index.id));
    }
    for prefix in prefixes {
        clear_prefix(exec, &prefix)?;
    }
    Ok(())
}

pub fn clear_prefix(exec: &Executor, prefix: &[u8]) -> Result<()> {
    let end = tern_exec::codec::prefix_end(prefix).map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
    let mut keys = Vec::new();
    exec.scan(std::ops::Bound::Included(prefix.to_vec()), end, false, tern_exec::exec::SCAN_CHUNK_ROWS, |key, _| {
        keys.push(key.to_vec());
        Ok(true)
    })?;
    for key in keys {
        exec.delete(key);
    }
    Ok(())
}
