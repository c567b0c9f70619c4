//! The dependency graph of an RGD's resources: nodes, "depends on" edges, cycle detection and
//! Kahn levels (seed 004, "level-based topological sorting").
//!
//! A [`Dag`] is acyclic at all times: [`Dag::add_dependency`] refuses an edge that would close a
//! cycle and reports the cycle as a path. Levels therefore cannot fail, and every query is a pure
//! function of the nodes and edges, whatever order they were added in.
//!
//! Each node remembers its original index (its position in the RGD's `resources`), so that nodes
//! of one level come out in the order the author wrote them.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// A dependency cycle, as the path that goes round it.
///
/// The path follows "depends on" edges and ends where it starts: `["a", "b", "a"]` means `a`
/// depends on `b` and `b` depends on `a`. A self-dependency is `["a", "a"]`. The path starts at
/// the node of the cycle that comes first in the RGD (lowest original index, then id), so the
/// same graph always reports the same cycle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dependency cycle: {}", self.path.join(" -> "))]
pub struct CycleError {
    /// The ids round the cycle; the first and the last are the same node.
    pub path: Vec<String>,
}

/// Why a node or a dependency could not be added to a [`Dag`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DagError {
    /// A node with this id is already in the graph.
    #[error("node `{id}` is already in the graph")]
    DuplicateNode {
        /// The id added twice.
        id: String,
    },
    /// The node that should get a dependency is not in the graph.
    #[error("node `{id}` is not in the graph")]
    UnknownNode {
        /// The missing id.
        id: String,
    },
    /// A node depends on an id that is not in the graph.
    #[error("`{from}` depends on `{dependency}`, which is not in the graph")]
    UnknownDependency {
        /// The node that has the dependency.
        from: String,
        /// The missing id it depends on.
        dependency: String,
    },
    /// The dependency would close a cycle (a self-dependency among them).
    #[error(transparent)]
    Cycle(CycleError),
}

impl DagError {
    /// A stable CamelCase name of the variant, for condition reasons, events and metric labels.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            DagError::DuplicateNode { .. } => "DuplicateNode",
            DagError::UnknownNode { .. } => "UnknownNode",
            DagError::UnknownDependency { .. } => "UnknownDependency",
            DagError::Cycle(_) => "DependencyCycle",
        }
    }
}

/// One node: its id, its original index, and its edges both ways (as node indices).
#[derive(Debug, Clone)]
struct Node {
    id: String,
    order: usize,
    dependencies: BTreeSet<usize>,
    dependents: BTreeSet<usize>,
}

/// A directed acyclic graph of string ids, where an edge goes from a node to a node it depends on.
///
/// The graph is acyclic at all times: [`Dag::add_dependency`] refuses an edge that would close a
/// cycle, so [`Dag::levels`] cannot fail. Each node keeps its original index (its position in the
/// RGD's `resources`), which orders the nodes inside a level. Every query depends only on the
/// nodes and edges, not on the order they were added in.
///
/// ```
/// use kro_graph::Dag;
///
/// let mut dag = Dag::new();
/// for (index, id) in ["vpc", "subnetA", "subnetB", "cluster"].into_iter().enumerate() {
///     dag.add_node(id, index)?;
/// }
/// dag.add_dependency("subnetA", "vpc")?;
/// dag.add_dependency("subnetB", "vpc")?;
/// dag.add_dependencies("cluster", ["subnetA", "subnetB"])?;
///
/// assert_eq!(
///     dag.levels(),
///     vec![vec!["vpc"], vec!["subnetA", "subnetB"], vec!["cluster"]]
/// );
/// // Closing a cycle is refused, and the graph is left as it was.
/// let cycle = dag.add_dependency("vpc", "cluster").unwrap_err();
/// assert_eq!(cycle.to_string(), "dependency cycle: vpc -> cluster -> subnetA -> vpc");
/// # Ok::<(), kro_graph::DagError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Dag {
    /// Nodes in the order they were added; edges refer to positions in this vector.
    nodes: Vec<Node>,
    index: HashMap<String, usize>,
}

impl Dag {
    /// An empty graph.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no nodes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether a node with this id is in the graph.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    /// The original index a node was added with, or `None` when it is not in the graph.
    #[must_use]
    pub fn original_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).map(|&node| self.nodes[node].order)
    }

    /// Adds a node with its original index (its position in the RGD's `resources`).
    ///
    /// Original indices need not be distinct or contiguous; ties are broken by id.
    ///
    /// # Errors
    ///
    /// [`DagError::DuplicateNode`] when a node with this id is already in the graph.
    pub fn add_node(
        &mut self,
        id: impl Into<String>,
        original_index: usize,
    ) -> Result<(), DagError> {
        let id = id.into();
        if self.index.contains_key(&id) {
            return Err(DagError::DuplicateNode { id });
        }
        self.index.insert(id.clone(), self.nodes.len());
        self.nodes.push(Node {
            id,
            order: original_index,
            dependencies: BTreeSet::new(),
            dependents: BTreeSet::new(),
        });
        Ok(())
    }

    /// Records that `from` depends on `dependency` (so `dependency` comes first).
    ///
    /// Adding an edge that is already there does nothing.
    ///
    /// # Errors
    ///
    /// - [`DagError::UnknownNode`] when `from` is not in the graph;
    /// - [`DagError::UnknownDependency`] when `dependency` is not in the graph;
    /// - [`DagError::Cycle`] when the edge would close a cycle, `from == dependency` included.
    ///   The edge is not added.
    pub fn add_dependency(&mut self, from: &str, dependency: &str) -> Result<(), DagError> {
        let (from_node, dependency_node) = self.edge_ends(from, dependency)?;
        self.link(from_node, dependency_node)
            .map_err(DagError::Cycle)
    }

    /// Records that `from` depends on each of `dependencies`, all or nothing.
    ///
    /// # Errors
    ///
    /// As [`Dag::add_dependency`], for the first dependency that fails; the graph is then left as
    /// it was before the call.
    pub fn add_dependencies<I, S>(&mut self, from: &str, dependencies: I) -> Result<(), DagError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        if !self.contains(from) {
            return Err(DagError::UnknownNode {
                id: from.to_owned(),
            });
        }
        let mut added = Vec::new();
        for dependency in dependencies {
            let result = self.edge_ends(from, dependency.as_ref()).and_then(
                |(from_node, dependency_node)| {
                    let is_new = !self.nodes[from_node]
                        .dependencies
                        .contains(&dependency_node);
                    self.link(from_node, dependency_node)
                        .map_err(DagError::Cycle)?;
                    if is_new {
                        added.push((from_node, dependency_node));
                    }
                    Ok(())
                },
            );
            if let Err(error) = result {
                for (from_node, dependency_node) in added {
                    self.unlink(from_node, dependency_node);
                }
                return Err(error);
            }
        }
        Ok(())
    }

    /// Records every edge `(from, dependency)` at once and checks for cycles once, after all are
    /// in: time linear in the nodes and edges, where [`Dag::add_dependency`] searches the graph
    /// for each edge (quadratic for a long chain). For building the graph of a whole RGD.
    ///
    /// # Errors
    ///
    /// As [`Dag::add_dependencies`]: the first error the edges would give one by one, and the
    /// graph is then left as it was (finding which edge closes a cycle replays them one by one).
    pub fn add_all_dependencies<I, S>(&mut self, edges: I) -> Result<(), DagError>
    where
        I: IntoIterator<Item = (S, S)>,
        S: AsRef<str>,
    {
        let edges: Vec<(S, S)> = edges.into_iter().collect();
        let mut added = Vec::new();
        for (from, dependency) in &edges {
            let ends = self.edge_ends(from.as_ref(), dependency.as_ref());
            let (from_node, dependency_node) = match ends {
                Ok(ends) => ends,
                Err(error) => {
                    self.unlink_all(&added);
                    return Err(error);
                }
            };
            if self.nodes[from_node].dependencies.insert(dependency_node) {
                self.nodes[dependency_node].dependents.insert(from_node);
                added.push((from_node, dependency_node));
            }
        }
        if self.is_acyclic() {
            return Ok(());
        }
        self.unlink_all(&added);
        for (from, dependency) in &edges {
            if let Err(error) = self.add_dependency(from.as_ref(), dependency.as_ref()) {
                self.unlink_all(&added);
                return Err(error);
            }
        }
        // Unreachable for a cycle found above; kept total rather than asserted.
        Ok(())
    }

    /// Whether Kahn's algorithm reaches every node.
    fn is_acyclic(&self) -> bool {
        let mut waiting: Vec<usize> = self
            .nodes
            .iter()
            .map(|node| node.dependencies.len())
            .collect();
        let mut ready: Vec<usize> = (0..self.nodes.len())
            .filter(|&node| waiting[node] == 0)
            .collect();
        let mut reached = 0;
        while let Some(node) = ready.pop() {
            reached += 1;
            for &dependent in &self.nodes[node].dependents {
                waiting[dependent] -= 1;
                if waiting[dependent] == 0 {
                    ready.push(dependent);
                }
            }
        }
        reached == self.nodes.len()
    }

    fn unlink_all(&mut self, edges: &[(usize, usize)]) {
        for &(from, dependency) in edges {
            self.unlink(from, dependency);
        }
    }

    /// The ids `id` depends on directly, sorted by id; `None` when `id` is not in the graph.
    #[must_use]
    pub fn dependencies(&self, id: &str) -> Option<Vec<&str>> {
        let node = *self.index.get(id)?;
        Some(self.sorted_ids(&self.nodes[node].dependencies))
    }

    /// The ids that depend on `id` directly, sorted by id; `None` when `id` is not in the graph.
    #[must_use]
    pub fn dependents(&self, id: &str) -> Option<Vec<&str>> {
        let node = *self.index.get(id)?;
        Some(self.sorted_ids(&self.nodes[node].dependents))
    }

    /// Every node id, by original index and then id.
    #[must_use]
    pub fn node_ids(&self) -> Vec<&str> {
        let mut nodes: Vec<usize> = (0..self.nodes.len()).collect();
        nodes.sort_by(|&a, &b| self.compare(a, b));
        nodes
            .into_iter()
            .map(|node| self.nodes[node].id.as_str())
            .collect()
    }

    /// The Kahn levels of the graph.
    ///
    /// Level 0 holds the nodes with no dependencies; level `k + 1` the nodes whose dependencies
    /// are all in levels `0..=k`, at least one of them in level `k`. Nodes of one level do not
    /// depend on each other and can be applied together. Inside a level, nodes are ordered by
    /// original index, then by id. Every node appears exactly once.
    #[must_use]
    pub fn levels(&self) -> Vec<Vec<&str>> {
        let mut waiting: Vec<usize> = self
            .nodes
            .iter()
            .map(|node| node.dependencies.len())
            .collect();
        let mut current: Vec<usize> = (0..self.nodes.len())
            .filter(|&node| waiting[node] == 0)
            .collect();
        let mut levels = Vec::new();
        while !current.is_empty() {
            current.sort_by(|&a, &b| self.compare(a, b));
            let mut next = Vec::new();
            for &node in &current {
                for &dependent in &self.nodes[node].dependents {
                    waiting[dependent] -= 1;
                    if waiting[dependent] == 0 {
                        next.push(dependent);
                    }
                }
            }
            levels.push(
                current
                    .iter()
                    .map(|&node| self.nodes[node].id.as_str())
                    .collect(),
            );
            current = next;
        }
        debug_assert_eq!(
            levels.iter().map(Vec::len).sum::<usize>(),
            self.nodes.len(),
            "a Dag never holds a cycle, so Kahn's algorithm reaches every node"
        );
        levels
    }

    /// A flat topological order: the [levels](Dag::levels) one after the other.
    ///
    /// Every node comes after all the nodes it depends on.
    #[must_use]
    pub fn topological_order(&self) -> Vec<&str> {
        self.levels().into_iter().flatten().collect()
    }

    /// The levels in deletion order: the last level first, so that dependents go before the
    /// nodes they depend on. Inside a level the order is the same as in [`Dag::levels`].
    #[must_use]
    pub fn deletion_levels(&self) -> Vec<Vec<&str>> {
        let mut levels = self.levels();
        levels.reverse();
        levels
    }

    /// Looks up both ends of a new edge.
    fn edge_ends(&self, from: &str, dependency: &str) -> Result<(usize, usize), DagError> {
        let from_node = *self.index.get(from).ok_or_else(|| DagError::UnknownNode {
            id: from.to_owned(),
        })?;
        let dependency_node =
            *self
                .index
                .get(dependency)
                .ok_or_else(|| DagError::UnknownDependency {
                    from: from.to_owned(),
                    dependency: dependency.to_owned(),
                })?;
        Ok((from_node, dependency_node))
    }

    /// Adds the edge `from -> dependency` unless it closes a cycle.
    fn link(&mut self, from: usize, dependency: usize) -> Result<(), CycleError> {
        if self.nodes[from].dependencies.contains(&dependency) {
            return Ok(());
        }
        if let Some(path) = self.path_between(dependency, from) {
            // The new edge goes from `from` to `dependency`; the path leads back to `from`.
            let mut cycle = Vec::with_capacity(path.len() + 1);
            cycle.push(from);
            cycle.extend(path);
            return Err(self.cycle_error(cycle));
        }
        self.nodes[from].dependencies.insert(dependency);
        self.nodes[dependency].dependents.insert(from);
        Ok(())
    }

    /// Removes the edge `from -> dependency`.
    fn unlink(&mut self, from: usize, dependency: usize) {
        self.nodes[from].dependencies.remove(&dependency);
        self.nodes[dependency].dependents.remove(&from);
    }

    /// The shortest path of "depends on" edges from `start` to `goal`, both included, trying
    /// dependencies in (original index, id) order so the answer depends only on the graph.
    fn path_between(&self, start: usize, goal: usize) -> Option<Vec<usize>> {
        let mut parent: Vec<Option<usize>> = vec![None; self.nodes.len()];
        let mut seen = vec![false; self.nodes.len()];
        let mut queue = VecDeque::from([start]);
        seen[start] = true;
        while let Some(node) = queue.pop_front() {
            if node == goal {
                let mut path = vec![node];
                let mut cursor = node;
                while let Some(previous) = parent[cursor] {
                    path.push(previous);
                    cursor = previous;
                }
                path.reverse();
                return Some(path);
            }
            let mut next: Vec<usize> = self.nodes[node]
                .dependencies
                .iter()
                .copied()
                .filter(|&dependency| !seen[dependency])
                .collect();
            next.sort_by(|&a, &b| self.compare(a, b));
            for dependency in next {
                seen[dependency] = true;
                parent[dependency] = Some(node);
                queue.push_back(dependency);
            }
        }
        None
    }

    /// Turns a closed path of node indices into a [`CycleError`] that starts at the cycle's
    /// first node in (original index, id) order.
    fn cycle_error(&self, closed: Vec<usize>) -> CycleError {
        let open = &closed[..closed.len().saturating_sub(1)];
        let start = (0..open.len())
            .min_by(|&a, &b| self.compare(open[a], open[b]))
            .unwrap_or(0);
        let path = open[start..]
            .iter()
            .chain(&open[..start])
            .chain(open.get(start))
            .map(|&node| self.nodes[node].id.clone())
            .collect();
        CycleError { path }
    }

    /// Orders nodes by original index, then id.
    fn compare(&self, a: usize, b: usize) -> Ordering {
        let (a, b) = (&self.nodes[a], &self.nodes[b]);
        a.order.cmp(&b.order).then_with(|| a.id.cmp(&b.id))
    }

    fn sorted_ids(&self, nodes: &BTreeSet<usize>) -> Vec<&str> {
        let mut ids: Vec<&str> = nodes
            .iter()
            .map(|&node| self.nodes[node].id.as_str())
            .collect();
        ids.sort_unstable();
        ids
    }
}

#[cfg(test)]
mod tests;
