use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;

use super::{CycleError, Dag, DagError};

/// A graph from `ids` (original index = position) and `dependent->dependency` edges.
fn graph(ids: &str, edges: &str) -> Dag {
    let mut dag = Dag::new();
    for (index, id) in ids.split(',').enumerate() {
        dag.add_node(id, index).expect("test ids are distinct");
    }
    for edge in edges.split(',').filter(|edge| !edge.is_empty()) {
        let (from, dependency) = edge.split_once("->").expect("test edges have an arrow");
        dag.add_dependency(from, dependency)
            .expect("test edges are acyclic");
    }
    dag
}

fn cycle(path: &[&str]) -> DagError {
    DagError::Cycle(CycleError {
        path: path.iter().map(|id| (*id).to_owned()).collect(),
    })
}

#[test]
fn nodes_without_dependencies_share_level_zero_in_original_order() {
    let dag = graph("c,a,b", "");
    assert_eq!(dag.levels(), vec![vec!["c", "a", "b"]]);
}

#[test]
fn a_node_waits_for_its_deepest_dependency() {
    // The seed's example: A <- B <- D and A <- C <- D.
    let dag = graph("A,B,C,D", "B->A,C->A,D->B,D->C");
    assert_eq!(dag.levels(), vec![vec!["A"], vec!["B", "C"], vec!["D"]]);

    let dag = graph("A,B,C,D,E,F", "A->F,A->B,B->F");
    assert_eq!(
        dag.levels(),
        vec![vec!["C", "D", "E", "F"], vec!["B"], vec!["A"]]
    );

    let dag = graph("A,B,C,D,E,F", "A->B,A->C,B->D,C->D,E->F,E->A");
    assert_eq!(
        dag.levels(),
        vec![vec!["D", "F"], vec!["B", "C"], vec!["A"], vec!["E"]]
    );
}

#[test]
fn topological_order_concatenates_the_levels() {
    let dag = graph("A,B,C,D,E,F", "C->D");
    assert_eq!(dag.topological_order(), vec!["A", "B", "D", "E", "F", "C"]);
}

#[test]
fn deletion_levels_start_with_the_last_level() {
    let dag = graph("A,B,C,D", "B->A,C->A,D->B,D->C");
    assert_eq!(
        dag.deletion_levels(),
        vec![vec!["D"], vec!["B", "C"], vec!["A"]]
    );
}

#[test]
fn ties_in_original_index_are_broken_by_id() {
    let mut dag = Dag::new();
    dag.add_node("zeta", 1).unwrap();
    dag.add_node("alpha", 1).unwrap();
    dag.add_node("omega", 0).unwrap();
    assert_eq!(dag.levels(), vec![vec!["omega", "alpha", "zeta"]]);
    assert_eq!(dag.node_ids(), vec!["omega", "alpha", "zeta"]);
}

#[test]
fn an_empty_graph_has_no_levels() {
    let dag = Dag::new();
    assert!(dag.is_empty());
    assert_eq!(dag.levels(), Vec::<Vec<&str>>::new());
    assert_eq!(dag.topological_order(), Vec::<&str>::new());
}

#[test]
fn dependencies_and_dependents_are_sorted_by_id() {
    let dag = graph(
        "app,db,cache,config",
        "app->db,app->config,app->cache,cache->config",
    );
    assert_eq!(dag.dependencies("app"), Some(vec!["cache", "config", "db"]));
    assert_eq!(dag.dependents("config"), Some(vec!["app", "cache"]));
    assert_eq!(dag.dependencies("config"), Some(vec![]));
    assert_eq!(dag.dependencies("missing"), None);
    assert_eq!(dag.dependents("missing"), None);
}

#[test]
fn a_node_added_twice_is_refused() {
    let mut dag = graph("a", "");
    assert_eq!(
        dag.add_node("a", 3),
        Err(DagError::DuplicateNode { id: "a".to_owned() })
    );
    assert_eq!(dag.len(), 1);
    assert_eq!(dag.original_index("a"), Some(0));
}

#[test]
fn an_unknown_dependency_names_both_ids() {
    let mut dag = graph("a", "");
    assert_eq!(
        dag.add_dependency("a", "ghost"),
        Err(DagError::UnknownDependency {
            from: "a".to_owned(),
            dependency: "ghost".to_owned()
        })
    );
    assert_eq!(
        dag.add_dependency("ghost", "a"),
        Err(DagError::UnknownNode {
            id: "ghost".to_owned()
        })
    );
    assert_eq!(
        dag.add_dependencies("ghost", Vec::<String>::new()),
        Err(DagError::UnknownNode {
            id: "ghost".to_owned()
        })
    );
}

#[test]
fn a_self_dependency_is_a_cycle() {
    let mut dag = graph("a", "");
    assert_eq!(dag.add_dependency("a", "a"), Err(cycle(&["a", "a"])));
    assert_eq!(dag.dependencies("a"), Some(vec![]));
}

#[test]
fn cycle_is_reported_with_its_path() {
    let mut dag = graph("a,b,c", "a->b,b->c");
    let error = dag.add_dependency("c", "a").unwrap_err();
    assert_eq!(error, cycle(&["a", "b", "c", "a"]));
    assert_eq!(error.reason(), "DependencyCycle");
    assert_eq!(error.to_string(), "dependency cycle: a -> b -> c -> a");
}

#[test]
fn the_cycle_starts_at_the_first_resource_whatever_edge_closes_it() {
    let mut dag = graph("a,b,c", "b->c,c->a");
    assert_eq!(
        dag.add_dependency("a", "b"),
        Err(cycle(&["a", "b", "c", "a"]))
    );
    let mut dag = graph("a,b,c", "a->b,c->a");
    assert_eq!(
        dag.add_dependency("b", "c"),
        Err(cycle(&["a", "b", "c", "a"]))
    );
}

#[test]
fn the_shortest_cycle_through_the_new_edge_is_reported() {
    // x depends on y directly and through a long detour; closing y -> x reports the short way.
    let mut dag = graph("x,p,q,y", "x->p,p->q,q->y,x->y");
    assert_eq!(dag.add_dependency("y", "x"), Err(cycle(&["x", "y", "x"])));
}

#[test]
fn a_refused_edge_leaves_the_graph_unchanged() {
    let mut dag = graph("a,b,c", "a->b,b->c");
    let before = dag
        .levels()
        .iter()
        .map(|level| level.join(","))
        .collect::<Vec<_>>();
    assert!(dag.add_dependency("c", "a").is_err());
    let after = dag
        .levels()
        .iter()
        .map(|level| level.join(","))
        .collect::<Vec<_>>();
    assert_eq!(before, after);
    assert_eq!(dag.dependencies("c"), Some(vec![]));
    assert_eq!(dag.dependents("a"), Some(vec![]));
}

#[test]
fn add_dependencies_is_all_or_nothing() {
    let mut dag = graph("a,b,c,d", "b->a");
    let error = dag.add_dependencies("a", ["c", "d", "b"]).unwrap_err();
    assert_eq!(error, cycle(&["a", "b", "a"]));
    assert_eq!(dag.dependencies("a"), Some(vec![]));
    assert_eq!(dag.dependents("c"), Some(vec![]));

    let error = dag.add_dependencies("a", ["c", "ghost"]).unwrap_err();
    assert_eq!(error.reason(), "UnknownDependency");
    assert_eq!(dag.dependencies("a"), Some(vec![]));

    // An edge that was already there before the call survives a rollback.
    dag.add_dependency("c", "d").unwrap();
    assert!(dag.add_dependencies("c", ["d", "ghost"]).is_err());
    assert_eq!(dag.dependencies("c"), Some(vec!["d"]));
}

#[test]
fn adding_an_edge_twice_changes_nothing() {
    let mut dag = graph("a,b", "a->b");
    dag.add_dependency("a", "b").unwrap();
    dag.add_dependencies("a", ["b", "b"]).unwrap();
    assert_eq!(dag.dependencies("a"), Some(vec!["b"]));
    assert_eq!(dag.dependents("b"), Some(vec!["a"]));
}

/// A random DAG: node `i` may only depend on nodes with a smaller position, which keeps it
/// acyclic; original indices are random (with ties) so they differ from the insertion order.
#[derive(Debug, Clone)]
struct RandomDag {
    orders: Vec<usize>,
    edges: Vec<(usize, usize)>,
}

fn id(node: usize) -> String {
    format!("n{node}")
}

fn random_dag() -> impl Strategy<Value = RandomDag> {
    (1usize..24).prop_flat_map(|size| {
        let orders = prop::collection::vec(0..size, size);
        let edges = prop::collection::vec((0..size, 0..size), 0..size * 3).prop_map(|pairs| {
            pairs
                .into_iter()
                .filter(|(a, b)| a != b)
                .map(|(a, b)| (a.max(b), a.min(b)))
                .collect()
        });
        (orders, edges).prop_map(|(orders, edges)| RandomDag { orders, edges })
    })
}

impl RandomDag {
    fn build(&self, reversed: bool) -> Dag {
        let mut dag = Dag::new();
        let mut nodes: Vec<usize> = (0..self.orders.len()).collect();
        let mut edges = self.edges.clone();
        if reversed {
            nodes.reverse();
            edges.reverse();
        }
        for node in nodes {
            dag.add_node(id(node), self.orders[node]).unwrap();
        }
        for (from, dependency) in edges {
            dag.add_dependency(&id(from), &id(dependency)).unwrap();
        }
        dag
    }

    /// The nodes `start` depends on, directly or not, and `start` itself.
    fn reachable(&self, start: usize) -> Vec<usize> {
        let mut seen = BTreeSet::from([start]);
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for &(from, dependency) in &self.edges {
                if from == node && seen.insert(dependency) {
                    stack.push(dependency);
                }
            }
        }
        seen.into_iter().collect()
    }
}

fn owned(levels: Vec<Vec<&str>>) -> Vec<Vec<String>> {
    levels
        .into_iter()
        .map(|level| level.into_iter().map(str::to_owned).collect())
        .collect()
}

proptest! {
    #[test]
    fn every_edge_goes_to_a_strictly_lower_level(input in random_dag()) {
        let dag = input.build(false);
        let levels = dag.levels();
        let level_of: HashMap<&str, usize> = levels
            .iter()
            .enumerate()
            .flat_map(|(level, ids)| ids.iter().map(move |id| (*id, level)))
            .collect();
        for (from, dependency) in &input.edges {
            prop_assert!(level_of[id(*from).as_str()] > level_of[id(*dependency).as_str()]);
        }
        // Each node sits as low as it can: right above its highest dependency.
        for (level, ids) in levels.iter().enumerate() {
            for node in ids {
                let highest = dag.dependencies(node).unwrap().iter().map(|d| level_of[d] + 1).max();
                prop_assert_eq!(highest.unwrap_or(0), level);
            }
        }
    }

    #[test]
    fn every_node_appears_exactly_once(input in random_dag()) {
        let dag = input.build(false);
        let mut seen: Vec<&str> = dag.topological_order();
        prop_assert_eq!(seen.len(), input.orders.len());
        seen.sort_unstable();
        seen.dedup();
        prop_assert_eq!(seen.len(), input.orders.len());
    }

    #[test]
    fn levels_are_ordered_and_do_not_depend_on_insertion_order(input in random_dag()) {
        let forward = input.build(false);
        let backward = input.build(true);
        prop_assert_eq!(owned(forward.levels()), owned(backward.levels()));
        for level in forward.levels() {
            let keys: Vec<(usize, &str)> = level
                .iter()
                .map(|id| (forward.original_index(id).unwrap(), *id))
                .collect();
            prop_assert!(keys.windows(2).all(|pair| pair[0] < pair[1]));
        }
        let mut deletion = owned(forward.levels());
        deletion.reverse();
        prop_assert_eq!(owned(forward.deletion_levels()), deletion);
    }

    #[test]
    fn an_edge_that_closes_a_cycle_is_reported(
        input in random_dag(),
        start in any::<prop::sample::Index>(),
        end in any::<prop::sample::Index>(),
    ) {
        let x = start.index(input.orders.len());
        let reachable = input.reachable(x);
        let y = reachable[end.index(reachable.len())];
        // x depends on y (maybe x == y), so y depending on x closes a cycle.
        let mut dag = input.build(false);
        let before = owned(dag.levels());
        let Err(DagError::Cycle(CycleError { path })) = dag.add_dependency(&id(y), &id(x)) else {
            return Err(TestCaseError::fail("the cycle was not reported"));
        };
        prop_assert_eq!(owned(dag.levels()), before);

        prop_assert!(path.len() >= 2);
        prop_assert_eq!(path.first(), path.last());
        let open = &path[..path.len() - 1];
        prop_assert_eq!(open.iter().collect::<BTreeSet<_>>().len(), open.len());
        prop_assert!(path.contains(&id(x)) && path.contains(&id(y)));
        for pair in path.windows(2) {
            let is_new_edge = pair[0] == id(y) && pair[1] == id(x);
            let is_edge = dag.dependencies(&pair[0]).unwrap().contains(&pair[1].as_str());
            prop_assert!(is_new_edge || is_edge);
        }
        let first = open
            .iter()
            .min_by_key(|id| (dag.original_index(id).unwrap(), (*id).clone()))
            .unwrap();
        prop_assert_eq!(&path[0], first);

        // The same graph reports the same cycle, whatever order it was built in.
        let mut backward = input.build(true);
        let again = backward.add_dependency(&id(y), &id(x));
        prop_assert_eq!(again, Err(DagError::Cycle(CycleError { path })));
    }
}

#[test]
fn edges_added_at_once_give_the_levels_of_edges_added_one_by_one() {
    let one_by_one = graph("A,B,C,D", "B->A,C->A,D->B,D->C");
    let mut at_once = graph("A,B,C,D", "");
    at_once
        .add_all_dependencies([("B", "A"), ("C", "A"), ("D", "B"), ("D", "C")])
        .expect("acyclic");
    assert_eq!(at_once.levels(), one_by_one.levels());
}

#[test]
fn edges_added_at_once_report_the_cycle_and_leave_the_graph_as_it_was() {
    let mut dag = graph("a,b,c", "b->a");
    let error = dag
        .add_all_dependencies([("c", "b"), ("a", "c")])
        .expect_err("a -> c -> b -> a");
    assert_eq!(error, cycle(&["a", "c", "b", "a"]));
    assert_eq!(dag.levels(), vec![vec!["a", "c"], vec!["b"]]);
    assert!(matches!(
        dag.add_all_dependencies([("a", "ghost")]),
        Err(DagError::UnknownDependency { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Adding all edges at once accepts and refuses exactly what adding them one by one does.
    #[test]
    fn edges_added_at_once_agree_with_edges_added_one_by_one(
        edges in proptest::collection::vec((0..8usize, 0..8usize), 0..20)
    ) {
        let ids: Vec<String> = (0..8).map(|i| format!("n{i}")).collect();
        let fresh = || {
            let mut dag = Dag::new();
            for (index, id) in ids.iter().enumerate() {
                dag.add_node(id.clone(), index).expect("distinct ids");
            }
            dag
        };
        let named: Vec<(&str, &str)> = edges
            .iter()
            .map(|&(from, to)| (ids[from].as_str(), ids[to].as_str()))
            .collect();
        let mut at_once = fresh();
        let mut one_by_one = fresh();
        let bulk = at_once.add_all_dependencies(named.iter().copied());
        let single = one_by_one.add_dependencies_each(&named);
        prop_assert_eq!(bulk.is_ok(), single.is_ok());
        if bulk.is_ok() {
            prop_assert_eq!(at_once.levels(), one_by_one.levels());
        } else {
            let untouched = fresh();
            prop_assert_eq!(at_once.levels(), untouched.levels());
        }
    }
}

impl Dag {
    /// Adds the edges one by one, stopping at the first error.
    fn add_dependencies_each(&mut self, edges: &[(&str, &str)]) -> Result<(), DagError> {
        for (from, dependency) in edges {
            self.add_dependency(from, dependency)?;
        }
        Ok(())
    }
}
