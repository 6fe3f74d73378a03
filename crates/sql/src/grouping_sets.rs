//! `GROUP BY GROUPING SETS (...)`, `ROLLUP (...)` and `CUBE (...)`, and `grouping(...)`.
//!
//! The GROUP BY list becomes its distinct grouping expressions and the grouping sets, the cross
//! product of each item's alternatives (`a, ROLLUP (b, c)` is the sets `(a, b, c)`, `(a, b)`,
//! `(a)`). A query with several sets runs one aggregation per set over the same input, each
//! giving NULL for the expressions its set leaves out, and UNION ALL of the results; `grouping(
//! args)` is, in each set's rows, the bit mask of the arguments the set leaves out (the first
//! argument the most significant bit), as in PostgreSQL.

use sqlparser::ast;
use tern_exec::error::{Error, Result};
use tern_exec::plan::{AggregateCall, AggregateFunction, Expr, Plan, SetOperator};
use tern_exec::value::Value;

/// The most grouping sets a query may expand to.
pub const MAX_SETS: usize = 4096;

/// A GROUP BY list with grouping sets: the distinct expressions and each set's indexes into them.
pub struct GroupingSets {
    pub exprs: Vec<ast::Expr>,
    pub sets: Vec<Vec<usize>>,
}

/// The grouping sets of a GROUP BY list; `None` for a plain list.
pub fn expand(items: &[ast::Expr]) -> Result<Option<GroupingSets>> {
    let items: Vec<ast::Expr> = items.iter().map(as_grouping_construct).collect();
    let items = items.as_slice();
    let special =
        |item: &ast::Expr| matches!(item, ast::Expr::Rollup(_) | ast::Expr::Cube(_) | ast::Expr::GroupingSets(_));
    if !items.iter().any(special) {
        return Ok(None);
    }
    let mut exprs: Vec<ast::Expr> = Vec::new();
    let mut index_of = |expr: &ast::Expr| match exprs.iter().position(|known| known == expr) {
        Some(index) => index,
        None => {
            exprs.push(expr.clone());
            exprs.len() - 1
        }
    };
    let mut sets: Vec<Vec<usize>> = vec![Vec::new()];
    for item in items {
        let alternatives: Vec<Vec<usize>> = match item {
            ast::Expr::Rollup(lists) => {
                let lists: Vec<Vec<usize>> =
                    lists.iter().map(|list| list.iter().map(&mut index_of).collect()).collect();
                (0..=lists.len()).rev().map(|count| lists[..count].concat()).collect()
            }
            ast::Expr::Cube(lists) => {
                let lists: Vec<Vec<usize>> =
                    lists.iter().map(|list| list.iter().map(&mut index_of).collect()).collect();
                if lists.len() > 12 {
                    return Err(Error::program_limit("CUBE is limited to 12 elements"));
                }
                let full = (1usize << lists.len()) - 1;
                (0..=full)
                    .rev()
                    .map(|mask| {
                        (0..lists.len())
                            .filter(|bit| mask & (1 << (lists.len() - 1 - bit)) != 0)
                            .flat_map(|bit| lists[bit].clone())
                            .collect()
                    })
                    .collect()
            }
            ast::Expr::GroupingSets(lists) => {
                lists.iter().map(|list| list.iter().map(&mut index_of).collect()).collect()
            }
            plain => vec![vec![index_of(plain)]],
        };
        let mut product = Vec::with_capacity(sets.len() * alternatives.len());
        for set in &sets {
            for alternative in &alternatives {
                let mut combined = set.clone();
                combined.extend(alternative.iter().filter(|index| !set.contains(index)));
                product.push(combined);
            }
        }
        if product.len() > MAX_SETS {
            return Err(Error::program_limit(format!("more than {MAX_SETS} grouping sets")));
        }
        sets = product;
    }
    Ok(Some(GroupingSets { exprs, sets }))
}

/// SQLite's parser reads `ROLLUP (a, b)` and `CUBE (a, b)` as calls of functions of those
/// names: the constructs they are.
fn as_grouping_construct(item: &ast::Expr) -> ast::Expr {
    let ast::Expr::Function(function) = item else { return item.clone() };
    let name = function.name.to_string().to_ascii_lowercase();
    let ast::FunctionArguments::List(list) = &function.args else { return item.clone() };
    if !matches!(name.as_str(), "rollup" | "cube") || function.over.is_some() || list.duplicate_treatment.is_some() {
        return item.clone();
    }
    let mut lists = Vec::new();
    for arg in &list.args {
        let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) = arg else { return item.clone() };
        lists.push(match expr {
            ast::Expr::Tuple(items) => items.clone(),
            ast::Expr::Nested(inner) => vec![(**inner).clone()],
            other => vec![other.clone()],
        });
    }
    if name == "rollup" { ast::Expr::Rollup(lists) } else { ast::Expr::Cube(lists) }
}

/// The aggregation of `input` by `group_by` for each grouping set (one set with every
/// expression when `sets` is `None`): output the group-by values, NULL where the set leaves one
/// out, then the aggregates.
pub fn aggregate_plan(
    input: Plan,
    group_by: Vec<Expr>,
    aggregates: Vec<AggregateCall>,
    sets: Option<&[Vec<usize>]>,
) -> Result<Plan> {
    let all: Vec<usize> = (0..group_by.len()).collect();
    let Some(sets) = sets else {
        let aggregates = with_masks(&aggregates, &group_by, &all)?;
        return Ok(Plan::Aggregate { input: Box::new(input), group_by, aggregates });
    };
    let mut union: Option<Plan> = None;
    for set in sets {
        let keys: Vec<Expr> = set.iter().map(|&index| group_by[index].clone()).collect();
        let calls = with_masks(&aggregates, &group_by, set)?;
        let aggregate = Plan::Aggregate { input: Box::new(input.clone()), group_by: keys, aggregates: calls };
        let mut exprs: Vec<Expr> = (0..group_by.len())
            .map(|index| match set.iter().position(|&member| member == index) {
                Some(position) => Expr::Column(position),
                None => Expr::Literal(Value::Null),
            })
            .collect();
        exprs.extend((0..aggregates.len()).map(|call| Expr::Column(set.len() + call)));
        let branch = Plan::Project { input: Box::new(aggregate), exprs };
        union = Some(match union {
            None => branch,
            Some(left) => {
                Plan::SetOperation { op: SetOperator::Union, all: true, left: Box::new(left), right: Box::new(branch) }
            }
        });
    }
    union.ok_or_else(|| Error::internal("no grouping set"))
}

/// The aggregates with each `grouping(...)` replaced by its bit mask in `set`.
fn with_masks(aggregates: &[AggregateCall], group_by: &[Expr], set: &[usize]) -> Result<Vec<AggregateCall>> {
    aggregates
        .iter()
        .map(|call| {
            if call.function != AggregateFunction::Grouping {
                return Ok(call.clone());
            }
            if call.args.len() > 31 {
                return Err(Error::new("54023", "GROUPING must have fewer than 32 arguments"));
            }
            let mut mask = 0i64;
            for arg in &call.args {
                let index = group_by.iter().position(|group| group == arg).ok_or_else(|| {
                    Error::grouping("arguments to GROUPING must be grouping expressions of the associated query level")
                })?;
                mask = (mask << 1) | i64::from(!set.contains(&index));
            }
            Ok(AggregateCall::plain(AggregateFunction::AnyValue, vec![Expr::Literal(Value::Integer(mask))]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(group_by: &str) -> Vec<Vec<usize>> {
        let sql = format!("SELECT 1 FROM t GROUP BY {group_by}");
        let statements = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql).unwrap();
        let ast::Statement::Query(query) = &statements[0] else { panic!() };
        let ast::SetExpr::Select(select) = query.body.as_ref() else { panic!() };
        let ast::GroupByExpr::Expressions(items, _) = &select.group_by else { panic!() };
        expand(items).unwrap().unwrap().sets
    }

    #[test]
    fn sets_of_rollup_cube_and_grouping_sets() {
        assert_eq!(sets("ROLLUP (a, b)"), [vec![0, 1], vec![0], vec![]]);
        assert_eq!(sets("CUBE (a, b)"), [vec![0, 1], vec![0], vec![1], vec![]]);
        assert_eq!(sets("GROUPING SETS ((a, b), (a), ())"), [vec![0, 1], vec![0], vec![]]);
        assert_eq!(sets("a, ROLLUP (b, c)"), [vec![0, 1, 2], vec![0, 1], vec![0]]);
        assert_eq!(sets("ROLLUP (a), CUBE (b)"), [vec![0, 1], vec![0], vec![1], vec![]]);
    }
}
