//! PostgreSQL's domains: `CREATE DOMAIN name [AS] type [DEFAULT expr] [CONSTRAINT name] CHECK
//! (condition on VALUE) ...` and `DROP DOMAIN [IF EXISTS] name`.
//!
//! A column declared with a domain gets the domain's base type (its affinity, its OID on the
//! wire), its DEFAULT when the column has none, and its checks as the column's CHECK with
//! `VALUE` standing for the column; a value that fails one is 23514, as in PostgreSQL.
//! `CAST(x AS domain)` casts to the base type and checks. A domain's definition is copied into
//! the columns that use it when they are created; a domain in use cannot be dropped (2BP01).

use sqlparser::ast::{self, VisitMut, VisitorMut};
use std::ops::ControlFlow;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::catalog::objects::DomainDef;
use tern_exec::error::{Error, Result};

/// CREATE DOMAIN.
pub fn create(catalog: &mut Catalog, create: &ast::CreateDomain) -> Result<()> {
    let name = crate::bind::object_name(&create.name)?.to_ascii_lowercase();
    crate::ddl::user_type::check_name_free(catalog, &name)?;
    let mut base_type = create.data_type.to_string();
    let mut checks = Vec::new();
    let mut inherited_default = None;
    if let Some(base) = catalog.domains.get(&base_type.to_ascii_lowercase()) {
        checks.extend(base.checks.iter().cloned());
        inherited_default = base.default.clone();
        base_type = base.base_type.clone();
    }
    for constraint in &create.constraints {
        match constraint {
            ast::TableConstraint::Check { expr, .. } => {
                if has_subquery(expr) {
                    return Err(Error::new("0A000", "cannot use subquery in check constraint"));
                }
                checks.push(expr.to_string());
            }
            other => return Err(Error::unsupported(format!("domain constraint {other}"))),
        }
    }
    let default = create.default.as_ref().map(ToString::to_string).or(inherited_default);
    catalog.domains.insert(name.clone(), Arc::new(DomainDef { name, base_type, default, checks }));
    Ok(())
}

/// DROP DOMAIN: false when it did not exist and IF EXISTS was given; 2BP01 while a column
/// uses it (PostgreSQL's CASCADE, which drops those columns, is not supported).
pub fn drop(catalog: &mut Catalog, name: &ast::ObjectName, if_exists: bool, cascade: bool) -> Result<bool> {
    let name = crate::bind::object_name(name)?.to_ascii_lowercase();
    let users: Vec<String> = catalog
        .tables
        .values()
        .flat_map(|table| {
            table
                .columns
                .iter()
                .filter(|column| column.domain.as_deref() == Some(name.as_str()))
                .map(|column| format!("{}.{}", table.name, column.name))
        })
        .collect();
    if let Some(user) = users.first() {
        if cascade {
            return Err(Error::unsupported("DROP DOMAIN ... CASCADE (it would drop the columns that use the domain)"));
        }
        return Err(Error::new("2BP01", format!("cannot drop type {name} because column {user} depends on it")));
    }
    match catalog.domains.remove(&name) {
        Some(_) => Ok(true),
        None if if_exists => Ok(false),
        None => Err(Error::new("42704", format!("type \"{name}\" does not exist"))),
    }
}

/// The domain a declared type names, if any.
pub fn of_type<'c>(catalog: &'c Catalog, declared: &str) -> Option<&'c Arc<DomainDef>> {
    if catalog.domains.is_empty() {
        return None;
    }
    catalog.domains.get(&tern_exec::types::type_key(declared))
}

/// The domain's checks over `value` (an expression), joined with AND; `None` without checks.
pub fn check_over(domain: &DomainDef, value: &ast::Expr) -> Result<Option<ast::Expr>> {
    let mut combined: Option<ast::Expr> = None;
    for check in &domain.checks {
        let mut condition = crate::bind::parse_expr(check)?;
        let _ = condition.visit(&mut ReplaceValue { value });
        let condition = ast::Expr::Nested(Box::new(condition));
        combined = Some(match combined {
            None => condition,
            Some(left) => {
                ast::Expr::BinaryOp { left: Box::new(left), op: ast::BinaryOperator::And, right: Box::new(condition) }
            }
        });
    }
    Ok(combined)
}

/// The domain's checks as a column's CHECK text, `VALUE` standing for the column.
pub fn column_check(domain: &DomainDef, column: &str) -> Result<Option<String>> {
    let column = ast::Expr::Identifier(ast::Ident::with_quote('"', column));
    Ok(check_over(domain, &column)?.map(|check| check.to_string()))
}

/// Whether an expression holds a subquery.
fn has_subquery(expr: &ast::Expr) -> bool {
    use sqlparser::ast::Visit;
    struct Finder;
    impl sqlparser::ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &ast::Expr) -> ControlFlow<()> {
            match expr {
                ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    expr.visit(&mut Finder).is_break()
}

struct ReplaceValue<'a> {
    value: &'a ast::Expr,
}

impl VisitorMut for ReplaceValue<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Identifier(ident) = expr
            && ident.quote_style.is_none()
            && ident.value.eq_ignore_ascii_case("value")
        {
            *expr = ast::Expr::Nested(Box::new(self.value.clone()));
        }
        ControlFlow::Continue(())
    }
}
