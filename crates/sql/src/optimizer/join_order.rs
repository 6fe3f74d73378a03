//! The order in which a FROM clause's inner joins run, chosen by estimated cost.
//!
//! Plans are left-deep: each join adds one relation to the rows joined so far, whose rows the
//! join holds in a hash table (or looks up by key) while the new relation streams past. Every
//! relation is read once whatever the order, so what an order changes is the size of what is
//! held and made: the cost of an order is the sum, over its joins, of the rows joined so far
//! (held) and the rows the join makes (Cluet and Moerkotte's C_out, with the build side added).
//!
//! Dynamic programming over the subsets of relations finds the cheapest order for up to
//! [`MAX_EXHAUSTIVE`] relations (as System R, over left-deep orders; without cross products
//! when conditions connect all the relations, since a misestimated cross product is the
//! costliest mistake a planner makes); larger FROM lists are ordered greedily, always joining
//! the connected relation that makes the fewest rows.

use super::cardinality::{DEFAULT_RANGE, Estimator};
use crate::catalog::Catalog;
use crate::plan::{BinaryOp, Expr, Plan};
use std::collections::BTreeMap;

/// Relations up to which every left-deep order is weighed (2^n subsets).
pub const MAX_EXHAUSTIVE: usize = 12;

/// A relation of a FROM list: its plan (its own filters applied) and the FROM-order position
/// of its first column.
pub struct Relation<'p> {
    pub plan: &'p Plan,
    pub offset: usize,
}

impl Relation<'_> {
    fn holds(&self, column: usize) -> bool {
        column >= self.offset && column < self.offset + self.plan.width()
    }
}

/// Each side's keys (local to its relation) of the equalities between two relations.
type KeyPairs = BTreeMap<(usize, usize), (Vec<Expr>, Vec<Expr>)>;

/// The join order of least estimated cost, when the statistics estimate every relation
/// (`conditions`: the conjuncts joining relations, each with the relations it reads, in FROM
/// order). The equalities between the same two relations make one edge, estimated together.
pub fn estimated_order(
    catalog: &Catalog,
    relations: &[Relation],
    conditions: &[(&[usize], &Expr)],
) -> Option<Vec<usize>> {
    let estimator = Estimator::new(catalog);
    let rows = relations.iter().map(|relation| estimator.rows(relation.plan)).collect::<Option<Vec<f64>>>()?;
    let mut pairs = KeyPairs::new();
    let mut edges = Vec::new();
    for &(joined, expr) in conditions {
        let (Expr::Binary(BinaryOp::Eq, a, b), &[first, second]) = (expr, joined) else {
            edges.push(Edge { relations: joined.to_vec(), selectivity: DEFAULT_RANGE });
            continue;
        };
        let a_first = a.columns().iter().all(|&column| relations[first].holds(column));
        let (first_side, second_side) = if a_first { (a, b) } else { (b, a) };
        let keys = pairs.entry((first, second)).or_default();
        keys.0.push(first_side.as_ref().clone().shift_columns_down(relations[first].offset));
        keys.1.push(second_side.as_ref().clone().shift_columns_down(relations[second].offset));
    }
    for ((first, second), (first_keys, second_keys)) in pairs {
        let selectivity = estimator.equality(relations[first].plan, &first_keys, relations[second].plan, &second_keys);
        edges.push(Edge { relations: vec![first, second], selectivity });
    }
    Some(JoinGraph { rows, edges }.cheapest_order())
}

/// What the order is chosen from: each relation's estimated rows (its own filters applied) and
/// the conditions between relations.
pub struct JoinGraph {
    pub rows: Vec<f64>,
    pub edges: Vec<Edge>,
}

/// A condition reading several relations, and the fraction of their combined rows it keeps.
pub struct Edge {
    pub relations: Vec<usize>,
    pub selectivity: f64,
}

/// A set of relations, one bit each (at most 64: `crate::limits::MAX_JOIN_TABLES`).
type Set = u64;

impl JoinGraph {
    fn bits(relations: &[usize]) -> Set {
        relations.iter().fold(0, |set, &relation| set | (1 << relation))
    }

    /// Estimated rows of joining the relations in `set`.
    fn rows_of(&self, set: Set) -> f64 {
        let mut rows: f64 = (0..self.rows.len())
            .filter(|&relation| set & (1 << relation) != 0)
            .map(|relation| self.rows[relation])
            .product();
        for edge in &self.edges {
            let edge_set = Self::bits(&edge.relations);
            if edge_set & set == edge_set {
                rows *= edge.selectivity;
            }
        }
        rows.max(1.0)
    }

    /// Whether a condition joins `relation` to the relations of `set`.
    fn connects(&self, set: Set, relation: usize) -> bool {
        self.edges.iter().any(|edge| {
            let edge_set = Self::bits(&edge.relations);
            let others = edge_set & !(1 << relation);
            edge_set & (1 << relation) != 0 && others != 0 && others & set == others
        })
    }

    /// Whether conditions join every relation to the first, directly or through others.
    fn is_connected(&self) -> bool {
        let mut set: Set = 1;
        while let Some(relation) =
            (0..self.rows.len()).find(|&relation| set & (1 << relation) == 0 && self.connects(set, relation))
        {
            set |= 1 << relation;
        }
        set.count_ones() as usize == self.rows.len()
    }

    /// The relations in join order, the first one held, the others joined one at a time.
    pub fn cheapest_order(&self) -> Vec<usize> {
        let count = self.rows.len();
        if count <= 1 {
            return (0..count).collect();
        }
        if count <= MAX_EXHAUSTIVE { self.exhaustive_order() } else { self.greedy_order() }
    }

    fn exhaustive_order(&self) -> Vec<usize> {
        let count = self.rows.len();
        let full: Set = (1 << count) - 1;
        let rows: Vec<f64> = (0..=full).map(|set| self.rows_of(set)).collect();
        // best[set] = (cost, the relation joined last).
        let cross_products = !self.is_connected();
        let mut best: Vec<Option<(f64, usize)>> = vec![None; full as usize + 1];
        for relation in 0..count {
            best[1 << relation] = Some((0.0, relation));
        }
        for set in 1..=full {
            if set.count_ones() < 2 {
                continue;
            }
            let members = (0..count).filter(|&relation| set & (1 << relation) != 0);
            // A cross product only where the conditions leave no other way.
            let candidates = members.filter(|&last| cross_products || self.connects(set & !(1 << last), last));
            for last in candidates {
                let before = set & !(1 << last);
                let Some((cost_before, _)) = best[before as usize] else { continue };
                let cost = cost_before + rows[before as usize] + rows[set as usize];
                if best[set as usize].is_none_or(|(cheapest, _)| cost < cheapest) {
                    best[set as usize] = Some((cost, last));
                }
            }
        }
        let mut order = Vec::with_capacity(count);
        let mut set = full;
        while set != 0 {
            let (_, last) = best[set as usize].expect("every set has an order");
            order.push(last);
            set &= !(1 << last);
        }
        order.reverse();
        order
    }

    fn greedy_order(&self) -> Vec<usize> {
        let count = self.rows.len();
        let by_rows = |a: &usize, b: &usize| self.rows[*a].total_cmp(&self.rows[*b]).then(a.cmp(b));
        let first = (0..count).min_by(by_rows).expect("relations");
        let mut order = vec![first];
        let mut set: Set = 1 << first;
        while order.len() < count {
            let left: Vec<usize> = (0..count).filter(|&relation| set & (1 << relation) == 0).collect();
            let connected: Vec<usize> = left.iter().copied().filter(|&relation| self.connects(set, relation)).collect();
            let next = if connected.is_empty() {
                left.into_iter().min_by(by_rows)
            } else {
                connected
                    .into_iter()
                    .min_by(|a, b| self.rows_of(set | (1 << a)).total_cmp(&self.rows_of(set | (1 << b))).then(a.cmp(b)))
            }
            .expect("a relation is left");
            order.push(next);
            set |= 1 << next;
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(a: usize, b: usize, selectivity: f64) -> Edge {
        Edge { relations: vec![a, b], selectivity }
    }

    /// The cheapest left-deep order without cross products, by brute force over permutations.
    fn brute_force(graph: &JoinGraph) -> f64 {
        fn permute(graph: &JoinGraph, order: &mut Vec<usize>, best: &mut f64) {
            let count = graph.rows.len();
            if order.len() == count {
                *best = best.min(cost(graph, order));
                return;
            }
            for relation in 0..count {
                let joins = order.is_empty() || graph.connects(JoinGraph::bits(order), relation);
                if !order.contains(&relation) && joins {
                    order.push(relation);
                    permute(graph, order, best);
                    order.pop();
                }
            }
        }
        let mut best = f64::INFINITY;
        permute(graph, &mut Vec::new(), &mut best);
        best
    }

    fn cost(graph: &JoinGraph, order: &[usize]) -> f64 {
        let mut cost = 0.0;
        let mut set: Set = 1 << order[0];
        for &next in &order[1..] {
            cost += graph.rows_of(set);
            set |= 1 << next;
            cost += graph.rows_of(set);
        }
        cost
    }

    #[test]
    fn a_chain_starts_at_its_selective_end() {
        // lineitem, supplier, orders and nation (1 row after its filter), as in TPC-H Q21.
        let graph = JoinGraph {
            rows: vec![2_000_000.0, 10_000.0, 500_000.0, 1.0],
            edges: vec![edge(0, 1, 1e-4), edge(0, 2, 1.0 / 1_500_000.0), edge(1, 3, 1.0 / 25.0)],
        };
        assert_eq!(graph.cheapest_order(), vec![3, 1, 0, 2]);
    }

    #[test]
    fn the_order_found_is_the_cheapest_without_cross_products() {
        use proptest::prelude::*;
        let graphs = (2usize..7).prop_flat_map(|count| {
            (
                proptest::collection::vec(1.0f64..1e6, count),
                proptest::collection::vec((0..count, 0..count, 1e-6f64..1.0), 0..count * 2),
            )
        });
        proptest!(|((rows, edges) in graphs)| {
            let edges = edges.into_iter().filter(|(a, b, _)| a != b).map(|(a, b, s)| edge(a, b, s)).collect();
            let graph = JoinGraph { rows, edges };
            let order = graph.cheapest_order();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..graph.rows.len()).collect::<Vec<_>>());
            if graph.is_connected() {
                let (found, best) = (cost(&graph, &order), brute_force(&graph));
                prop_assert!(found <= best * 1.000_001, "{} > {}", found, best);
            }
        });
    }

    #[test]
    fn many_relations_are_ordered_greedily() {
        let count = MAX_EXHAUSTIVE + 3;
        let rows = (0..count).map(|relation| 1000.0 * (relation + 1) as f64).collect();
        let edges = (1..count).map(|relation| edge(relation - 1, relation, 1.0 / 1000.0)).collect();
        let order = JoinGraph { rows, edges }.cheapest_order();
        assert_eq!(order, (0..count).collect::<Vec<_>>());
    }
}
