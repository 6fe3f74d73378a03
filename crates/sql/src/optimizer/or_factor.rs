//! ORs of ANDs in a WHERE clause, made usable by the join planner.
//!
//! TPC-H Q19 writes its join key inside each arm of an OR:
//! `(p_partkey = l_partkey AND p_brand = 'Brand#12' AND ...) OR (p_partkey = l_partkey AND ...)`.
//! Left as it is, the OR reads both tables, so it can only be checked after a cross join.
//! Two rewrites fix that:
//! - [`factor_common`]: a conjunct found in every arm is taken out of the OR
//!   (`(a AND b) OR (a AND c)` is `a AND (b OR c)`), so the join key becomes a join key.
//! - [`implied_filters`]: when every arm says something of one relation alone, the OR of
//!   those parts is implied and filters that relation before the join. The whole OR is still
//!   checked after it.
//!
//! Both hold in SQL's three-valued logic: AND and OR distribute over each other there as in
//! two-valued logic, and a WHERE clause keeps a row only when it is true.

use tern_exec::plan::has_subquery;
use tern_exec::plan::{BinaryOp, Expr};

/// The conjuncts `expr` is equivalent to, with the conjuncts common to every arm of an OR
/// taken out of it. An expression that is no OR, or whose arms share nothing, comes back alone.
pub fn factor_common(expr: Expr) -> Vec<Expr> {
    if !matches!(expr, Expr::Binary(BinaryOp::Or, ..)) {
        return vec![expr];
    }
    let arms: Vec<Vec<Expr>> = disjuncts(expr.clone()).into_iter().map(conjuncts).collect();
    let common: Vec<Expr> = arms[0]
        .iter()
        .filter(|conjunct| is_stable(conjunct) && arms[1..].iter().all(|arm| arm.iter().any(|c| same(c, conjunct))))
        .cloned()
        .collect();
    if common.is_empty() {
        return vec![expr];
    }
    let mut rest = Vec::with_capacity(arms.len());
    for arm in arms {
        let remaining: Vec<Expr> =
            arm.into_iter().filter(|conjunct| !common.iter().any(|c| same(c, conjunct))).collect();
        match conjoin(remaining) {
            Some(remaining) => rest.push(remaining),
            // One arm is nothing but the common part: the OR is true whenever that part is.
            None => return common,
        }
    }
    let mut out = common;
    out.extend(disjoin(rest));
    out
}

/// Filters implied by an OR for single relations: for each relation (as `relation_of` maps a
/// column to its relation) of which every arm says something alone, the OR of what each arm
/// says of it. The OR itself must still be checked; these only let rows be dropped earlier.
pub fn implied_filters(expr: &Expr, relations: usize, relation_of: &dyn Fn(usize) -> usize) -> Vec<Expr> {
    if !matches!(expr, Expr::Binary(BinaryOp::Or, ..)) || has_subquery(expr) {
        return Vec::new();
    }
    let arms: Vec<Vec<Expr>> = disjuncts(expr.clone()).into_iter().map(conjuncts).collect();
    let mut implied = Vec::new();
    for relation in 0..relations {
        let parts: Option<Vec<Expr>> = arms
            .iter()
            .map(|arm| {
                let own: Vec<Expr> = arm
                    .iter()
                    .filter(|conjunct| {
                        let columns = conjunct.columns();
                        !columns.is_empty() && columns.iter().all(|&column| relation_of(column) == relation)
                    })
                    .cloned()
                    .collect();
                conjoin(own)
            })
            .collect();
        if let Some(parts) = parts {
            implied.extend(disjoin(parts));
        }
    }
    implied
}

/// Whether two conjuncts say the same: equal, or equalities with their sides swapped.
fn same(a: &Expr, b: &Expr) -> bool {
    match (a, b) {
        (Expr::Binary(BinaryOp::Eq, a_left, a_right), Expr::Binary(BinaryOp::Eq, b_left, b_right)) => {
            (a_left == b_left && a_right == b_right) || (a_left == b_right && a_right == b_left)
        }
        _ => a == b,
    }
}

fn disjuncts(expr: Expr) -> Vec<Expr> {
    match expr {
        Expr::Binary(BinaryOp::Or, left, right) => {
            let mut out = disjuncts(*left);
            out.extend(disjuncts(*right));
            out
        }
        other => vec![other],
    }
}

fn conjuncts(expr: Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    crate::bind::split_conjuncts(expr, &mut out);
    out
}

fn conjoin(exprs: Vec<Expr>) -> Option<Expr> {
    exprs.into_iter().reduce(|left, right| Expr::Binary(BinaryOp::And, Box::new(left), Box::new(right)))
}

fn disjoin(exprs: Vec<Expr>) -> Option<Expr> {
    exprs.into_iter().reduce(|left, right| Expr::Binary(BinaryOp::Or, Box::new(left), Box::new(right)))
}

/// Whether evaluating the conjunct once instead of once per arm changes nothing: no subquery
/// and no function call (a volatile one such as `random()` would be drawn fewer times).
fn is_stable(expr: &Expr) -> bool {
    let mut stable = true;
    expr.walk(&mut |expr| {
        stable &= !matches!(
            expr,
            Expr::InSubquery { .. } | Expr::Exists { .. } | Expr::ScalarSubquery(_) | Expr::Function(..)
        )
    });
    stable
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_exec::value::Value;

    fn column(index: usize) -> Expr {
        Expr::Column(index)
    }

    fn eq(left: Expr, right: Expr) -> Expr {
        Expr::Binary(BinaryOp::Eq, Box::new(left), Box::new(right))
    }

    fn int(value: i64) -> Expr {
        Expr::Literal(Value::Integer(value))
    }

    fn and(left: Expr, right: Expr) -> Expr {
        Expr::Binary(BinaryOp::And, Box::new(left), Box::new(right))
    }

    fn or(left: Expr, right: Expr) -> Expr {
        Expr::Binary(BinaryOp::Or, Box::new(left), Box::new(right))
    }

    #[test]
    fn a_conjunct_in_every_arm_is_taken_out() {
        let key = eq(column(0), column(2));
        let expr = or(and(key.clone(), eq(column(1), int(1))), and(eq(column(3), int(2)), key.clone()));
        let factored = factor_common(expr);
        assert_eq!(factored, vec![key, or(eq(column(1), int(1)), eq(column(3), int(2)))]);
    }

    #[test]
    fn an_arm_that_is_only_the_common_part_makes_the_or_true() {
        let key = eq(column(0), column(2));
        let expr = or(key.clone(), and(key.clone(), eq(column(1), int(1))));
        assert_eq!(factor_common(expr), vec![key]);
    }

    #[test]
    fn an_equality_written_the_other_way_round_is_common_too() {
        let expr = or(
            and(eq(column(0), column(2)), eq(column(1), int(1))),
            and(eq(column(2), column(0)), eq(column(3), int(2))),
        );
        assert_eq!(
            factor_common(expr),
            vec![eq(column(0), column(2)), or(eq(column(1), int(1)), eq(column(3), int(2)))]
        );
    }

    #[test]
    fn arms_with_nothing_in_common_stay_as_they_are() {
        let expr = or(eq(column(0), int(1)), eq(column(1), int(2)));
        assert_eq!(factor_common(expr.clone()), vec![expr]);
    }

    #[test]
    fn each_relation_named_by_every_arm_gets_an_implied_filter() {
        // Relation 0 owns columns 0-1, relation 1 columns 2-3.
        let relation_of = |column: usize| column / 2;
        let expr = or(
            and(and(eq(column(0), column(2)), eq(column(1), int(1))), eq(column(3), int(5))),
            and(eq(column(1), int(2)), eq(column(0), column(2))),
        );
        let implied = implied_filters(&expr, 2, &relation_of);
        // Relation 1 is not named alone by the second arm: no filter for it.
        assert_eq!(implied, vec![or(eq(column(1), int(1)), eq(column(1), int(2)))]);
    }
}
