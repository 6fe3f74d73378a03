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

use std::collections::BTreeMap;
use tern_exec::cardinality::{DEFAULT_RANGE, Estimator};
use tern_exec::catalog::Catalog;
use tern_exec::plan::{BinaryOp, Expr, Plan};
use tern_exec::value::Affinity;

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

/// Each side's keys (local to its relation) of the equalities between two relations, and the
/// equivalence classes of those that are column equalities.
type KeyPairs = BTreeMap<(usize, usize), (Vec<Expr>, Vec<Expr>, Vec<usize>)>;

/// A join order, and the equalities it needs that the query implies but does not state.
pub struct Order {
    pub relations: Vec<usize>,
    /// `a = c` for `a = b AND b = c` ([`equivalence_classes`]): each with the two relations it
    /// joins, as a conjunct over FROM-order columns.
    pub implied: Vec<(Vec<usize>, Expr)>,
}

/// The join order of least estimated cost, when the statistics estimate every relation
/// (`conditions`: the conjuncts joining relations, each with the relations it reads, in FROM
/// order). The equalities between the same two relations make one edge, estimated together;
/// equalities implied by transitivity join relations the query joins only through others.
pub fn estimated_order(catalog: &Catalog, relations: &[Relation], conditions: &[(&[usize], &Expr)]) -> Option<Order> {
    let estimator = Estimator::new(catalog);
    let rows = relations.iter().map(|relation| estimator.rows(relation.plan)).collect::<Option<Vec<f64>>>()?;
    let classes = equivalence_classes(relations, conditions);
    let mut pairs = KeyPairs::new();
    let mut edges = Vec::new();
    for &(joined, expr) in conditions {
        // An equality whose sides each read one of its two relations (not `5 = a.x + b.y`).
        let sides = match *joined {
            [first, second] => crate::bind::equi_sides(expr, |column| relations[first].holds(column))
                .map(|sides| (first, second, sides)),
            _ => None,
        };
        let Some((first, second, (first_side, second_side))) = sides else {
            edges.push(Edge::stated(joined.to_vec(), DEFAULT_RANGE, Vec::new()));
            continue;
        };
        let keys = pairs.entry((first, second)).or_default();
        if let (Expr::Column(x), Expr::Column(y)) = (&first_side, &second_side)
            && let Some(class) = classes.class_of(*x).filter(|&class| classes.class_of(*y) == Some(class))
        {
            keys.2.push(class);
        }
        keys.0.push(first_side.shift_columns_down(relations[first].offset));
        keys.1.push(second_side.shift_columns_down(relations[second].offset));
    }
    for ((first, second), (first_keys, second_keys, pair_classes)) in &pairs {
        let selectivity = estimator.equality(relations[*first].plan, first_keys, relations[*second].plan, second_keys);
        edges.push(Edge::stated(vec![*first, *second], selectivity, pair_classes.clone()));
    }
    let implied = classes.implied(&pairs);
    for &Implied { class, first: (first, first_column), second: (second, second_column) } in &implied {
        let local = |relation: usize, column: usize| Expr::Column(column - relations[relation].offset);
        let selectivity = estimator.equality(
            relations[first].plan,
            &[local(first, first_column)],
            relations[second].plan,
            &[local(second, second_column)],
        );
        edges.push(Edge { relations: vec![first, second], selectivity, classes: vec![class], implied: true });
    }
    let order = JoinGraph { rows, edges }.cheapest_order();
    let implied = implied
        .into_iter()
        .map(|Implied { first: (first, first_column), second: (second, second_column), .. }| {
            let equality =
                Expr::Binary(BinaryOp::Eq, Box::new(Expr::Column(first_column)), Box::new(Expr::Column(second_column)));
            (vec![first, second], equality)
        })
        .collect();
    Some(Order { relations: order, implied })
}

/// Columns that stated equalities make equal: classes of FROM-order columns, each joined to
/// another by `a = b` between plain integer columns of two tables (SQLite's INTEGER affinity,
/// PostgreSQL's smallint, integer and bigint). Equality of such values is
/// transitive (numbers compare exactly, a NULL equals nothing), so `a = b AND b = c` implies
/// `a = c`; other types are left out (a collation, text against numbers).
struct Classes {
    /// Each column's class, by FROM-order column.
    class: BTreeMap<usize, usize>,
    /// Each class's columns with their relations, in FROM order.
    members: Vec<Vec<(usize, usize)>>,
}

/// An equality a class implies: two (relation, FROM-order column) members of it.
struct Implied {
    class: usize,
    first: (usize, usize),
    second: (usize, usize),
}

fn equivalence_classes(relations: &[Relation], conditions: &[(&[usize], &Expr)]) -> Classes {
    let integer_column = |relation: usize, column: usize| match relations[relation].plan {
        Plan::Scan { table, .. } => table
            .columns
            .get(column - relations[relation].offset)
            .is_some_and(|def| matches!(def.affinity, Affinity::Integer | Affinity::Int(_))),
        _ => false,
    };
    // Union-find over the columns, by FROM-order column.
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    fn root(parent: &mut BTreeMap<usize, usize>, column: usize) -> usize {
        let mut at = column;
        while let Some(&up) = parent.get(&at).filter(|&&up| up != at) {
            at = up;
        }
        parent.insert(column, at);
        at
    }
    let mut relation_of = BTreeMap::new();
    for &(joined, expr) in conditions {
        let (Expr::Binary(BinaryOp::Eq, a, b), &[first, second]) = (expr, joined) else { continue };
        let (Expr::Column(a), Expr::Column(b)) = (a.as_ref(), b.as_ref()) else { continue };
        let (a_relation, b_relation) = if relations[first].holds(*a) { (first, second) } else { (second, first) };
        if !integer_column(a_relation, *a) || !integer_column(b_relation, *b) {
            continue;
        }
        relation_of.insert(*a, a_relation);
        relation_of.insert(*b, b_relation);
        let (a_root, b_root) = (root(&mut parent, *a), root(&mut parent, *b));
        parent.insert(a_root.max(b_root), a_root.min(b_root));
    }
    let mut class = BTreeMap::new();
    let mut members: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut class_of_root = BTreeMap::new();
    for (&column, &relation) in &relation_of {
        let column_root = root(&mut parent, column);
        let id = *class_of_root.entry(column_root).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        class.insert(column, id);
        members[id].push((relation, column));
    }
    Classes { class, members }
}

impl Classes {
    fn class_of(&self, column: usize) -> Option<usize> {
        self.class.get(&column).copied()
    }

    /// For each class, an equality between each two of its relations that no stated equality
    /// of the class joins (the first column of each).
    fn implied(&self, pairs: &KeyPairs) -> Vec<Implied> {
        let mut implied = Vec::new();
        for (class, members) in self.members.iter().enumerate() {
            let mut firsts: Vec<(usize, usize)> = Vec::new();
            for &(relation, column) in members {
                if !firsts.iter().any(|&(seen, _)| seen == relation) {
                    firsts.push((relation, column));
                }
            }
            firsts.sort_unstable();
            for (at, &first) in firsts.iter().enumerate() {
                for &second in &firsts[at + 1..] {
                    let stated =
                        pairs.get(&(first.0, second.0)).is_some_and(|(_, _, classes)| classes.contains(&class));
                    if !stated {
                        implied.push(Implied { class, first, second });
                    }
                }
            }
        }
        implied
    }
}

/// Joins the parts (disjoint sets) holding relations `a` and `b`: false when one part already
/// held both.
fn join_parts(parts: &mut Vec<Set>, a: usize, b: usize) -> bool {
    let part_of = |parts: &[Set], relation: usize| parts.iter().position(|part| part & (1 << relation) != 0);
    match (part_of(parts, a), part_of(parts, b)) {
        (Some(x), Some(y)) if x == y => false,
        (Some(x), Some(y)) => {
            parts[x] |= parts[y];
            parts.remove(y);
            true
        }
        (Some(x), None) => {
            parts[x] |= 1 << b;
            true
        }
        (None, Some(y)) => {
            parts[y] |= 1 << a;
            true
        }
        (None, None) => {
            parts.push((1 << a) | (1 << b));
            true
        }
    }
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
    /// The equivalence classes of the column equalities it holds.
    pub classes: Vec<usize>,
    /// An equality the query implies but does not state: it counts only where the stated
    /// equalities of its class leave its relations apart (else it filters nothing more).
    pub implied: bool,
}

impl Edge {
    pub fn stated(relations: Vec<usize>, selectivity: f64, classes: Vec<usize>) -> Edge {
        Edge { relations, selectivity, classes, implied: false }
    }
}

/// A set of relations, one bit each (at most 64: `tern_exec::limits::MAX_JOIN_TABLES`).
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
        for edge in self.edges.iter().filter(|edge| !edge.implied) {
            let edge_set = Self::bits(&edge.relations);
            if edge_set & set == edge_set {
                rows *= edge.selectivity;
            }
        }
        (rows * self.implied_selectivity(set)).max(1.0)
    }

    /// What the implied equalities within `set` keep: per class, those that join parts of the
    /// set the class's stated equalities leave apart (a spanning forest, so that `a = b AND
    /// b = c AND a = c` counts two equalities, not three).
    fn implied_selectivity(&self, set: Set) -> f64 {
        let mut selectivity = 1.0;
        let within = |edge: &&Edge| Self::bits(&edge.relations) & set == Self::bits(&edge.relations);
        let mut classes: Vec<usize> = self
            .edges
            .iter()
            .filter(|edge| edge.implied)
            .filter(within)
            .flat_map(|edge| edge.classes.clone())
            .collect();
        classes.sort_unstable();
        classes.dedup();
        for class in classes {
            // The parts of the set the class joins, one bit set each.
            let mut parts: Vec<Set> = Vec::new();
            let of_class = |edge: &&Edge| edge.classes.contains(&class) && edge.relations.len() == 2;
            for edge in self.edges.iter().filter(|edge| !edge.implied).filter(within).filter(of_class) {
                join_parts(&mut parts, edge.relations[0], edge.relations[1]);
            }
            for edge in self.edges.iter().filter(|edge| edge.implied).filter(within).filter(of_class) {
                if join_parts(&mut parts, edge.relations[0], edge.relations[1]) {
                    selectivity *= edge.selectivity;
                }
            }
        }
        selectivity
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
        Edge::stated(vec![a, b], selectivity, Vec::new())
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
    fn an_implied_equality_counts_only_where_the_stated_ones_leave_a_gap() {
        // customer - supplier - nation joined on one nation key (TPC-H Q5), customer to nation
        // only through supplier as stated.
        let class = |a: usize, b: usize, implied: bool| Edge {
            relations: vec![a, b],
            selectivity: 1.0 / 25.0,
            classes: vec![0],
            implied,
        };
        let graph = JoinGraph {
            rows: vec![150_000.0, 10_000.0, 5.0],
            edges: vec![class(0, 1, false), class(1, 2, false), class(0, 2, true)],
        };
        assert_eq!(graph.rows_of(0b101), 30_000.0);
        assert_eq!(graph.rows_of(0b111), 150_000.0 * 10_000.0 * 5.0 / 625.0);
        assert!(graph.connects(0b100, 0));
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
