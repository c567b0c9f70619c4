//! Direct deploy as a driver of the engine's convergence loop ([`crate::converge`]): it plans
//! with the instance (its `schema` converted once), reads what the plan needs from the server,
//! widens the parent ConfigMap's inventory, reports progress, and stops at the first problem.

use std::collections::{BTreeSet, HashMap, HashSet};

use kro_graph::CompiledGraph;
use kro_runtime::{Inventory, ObjectKey, Observed, Plan, PlanOptions, Read};
use kro_schema::GroupKind;
use serde_json::Value as Json;
use tokio::time::Instant;

use super::error::{DirectError, first_failure};
use super::observe::Reader;
use super::parent::ParentRef;
use crate::apply::{AppliedObject, ApplyError, ApplyOutcome};
use crate::converge::{Batch, Driver, OwnedElsewhere, add_member};
use crate::error::{ObjectError, api_message};
use crate::json::filed_as;
use crate::progress::{Progress, Reporter, report_changes, unsettled};
use crate::stop::Stop;

/// One deploy's drive of the loop.
pub(super) struct DirectDriver<'a> {
    /// Reads for the deploy; its client writes the parent ConfigMap too.
    pub(super) reader: Reader<'a>,
    /// The version the parent is labelled with.
    pub(super) kro_version: &'a str,
    /// Writes are sent with `dryRun=All`.
    pub(super) dry_run: bool,
    /// The parameters of the parent's applies.
    pub(super) params: &'a kube::api::PatchParams,
    pub(super) graph: &'a CompiledGraph,
    /// The instance, admitted, with the parent's UID.
    pub(super) instance: &'a Json,
    /// `schema`, converted from the instance once: it does not change during a deploy.
    pub(super) schema: kro_cel::Value,
    pub(super) options: PlanOptions,
    /// The version the graph uses of each kind it names.
    pub(super) versions: &'a HashMap<GroupKind, String>,
    /// Every read the plans asked for (what the wait watches).
    pub(super) reads: BTreeSet<Read>,
    /// The state last reported of each node.
    pub(super) reported: HashMap<String, String>,
    pub(super) report: Reporter<'a>,
    pub(super) stop: Stop,
    pub(super) deadline: Option<Instant>,
    pub(super) run: &'a mut Run,
    /// Objects a dry run could not check (their kind or namespace is the graph's own).
    pub(super) unchecked: HashSet<ObjectKey>,
    pub(super) parent: &'a ParentRef,
    pub(super) inventory: &'a mut Inventory,
    pub(super) uid: String,
    pub(super) applyset: String,
    /// The first refusal of the batch being recorded.
    pub(super) refused: Option<DirectError>,
}

impl Driver for DirectDriver<'_> {
    type Error = DirectError;

    fn applyset(&self) -> &str {
        &self.applyset
    }

    fn scope(&self) -> &str {
        &self.uid
    }

    async fn plan(&mut self, observed: &Observed) -> Result<Plan, DirectError> {
        self.reader
            .learn_scopes(self.graph, &mut self.options.served_scopes)
            .await;
        let current = kro_runtime::plan_with_schema(
            self.graph,
            self.instance,
            self.schema.clone(),
            observed,
            &self.options,
        );
        if self.stop.is_stopped() {
            return Err(DirectError::Stopped {
                waiting: unsettled(&current),
            });
        }
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return Err(DirectError::TimedOut {
                waiting: unsettled(&current),
            });
        }
        Ok(current)
    }

    async fn fill(&mut self, current: &Plan, observed: &mut Observed) -> Result<bool, DirectError> {
        self.reader
            .fill(current, self.versions, observed, &mut self.reads)
            .await
    }

    fn proceed(&mut self, current: &Plan) -> Result<bool, DirectError> {
        report_changes(current, &mut self.reported, self.report);
        if let Some(instance) = self.run.instance.as_mut() {
            instance["status"] = current.status.to_json();
        }
        if let Some(failed) = first_failure(current) {
            return Err(failed);
        }
        if let Some(error) = current.status.errors.first() {
            return Err(DirectError::Status {
                errors: current
                    .status
                    .errors
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                first: error.clone(),
            });
        }
        if self.stop.is_stopped() {
            return Err(DirectError::Stopped {
                waiting: unsettled(current),
            });
        }
        Ok(true)
    }

    fn skips(&self, key: &ObjectKey) -> bool {
        self.unchecked.contains(key)
    }

    fn owned_elsewhere(&mut self, found: Vec<OwnedElsewhere>) -> Result<(), DirectError> {
        match found.into_iter().next() {
            Some(found) => Err(ObjectError::from(found).into()),
            None => Ok(()),
        }
    }

    async fn widen_inventory(
        &mut self,
        _current: &Plan,
        batch: &Batch,
    ) -> Result<bool, DirectError> {
        let before = self.inventory.clone();
        for desired in &batch.objects {
            add_member(self.inventory, &desired.key, &self.parent.namespace);
        }
        if *self.inventory != before {
            self.parent
                .write(
                    self.reader.client,
                    self.graph,
                    self.instance,
                    self.inventory,
                    self.kro_version,
                    self.params,
                )
                .await?;
        }
        Ok(true)
    }

    fn applied(&mut self, batch: &Batch, applied: AppliedObject, observed: &mut Observed) {
        let level = batch.level;
        let (object, created) = match applied.outcome {
            Ok(ApplyOutcome::Created(object)) => (object, true),
            Ok(ApplyOutcome::Updated(object)) => (object, false),
            Ok(ApplyOutcome::Unchanged) => return,
            // A dry run stores no CRD and no Namespace, so the objects of a kind or in a
            // namespace the graph itself creates cannot be checked; the plan goes on without
            // them.
            Err(error) if self.dry_run && unstored_by_dry_run(&error) => {
                (self.report)(&Progress::Unchecked {
                    level,
                    key: applied.key.clone(),
                    reason: unchecked_reason(&error),
                });
                if let Some(desired) = batch
                    .objects
                    .iter()
                    .find(|desired| desired.key == applied.key)
                {
                    observed.insert(desired.object.clone());
                }
                self.unchecked.insert(applied.key);
                return;
            }
            Err(source) => {
                // Every answer of the batch is recorded first: what it created must be known
                // to a rollback.
                self.refused.get_or_insert(
                    ObjectError::Apply {
                        key: Box::new(applied.key),
                        level: Some(level),
                        source: Box::new(source),
                    }
                    .into(),
                );
                return;
            }
        };
        (self.report)(&Progress::Applied {
            level,
            key: applied.key.clone(),
            created,
        });
        if created && !self.dry_run {
            self.run.created.push(object.clone());
        }
        observed.insert(filed_as(&applied.key, object));
    }

    fn batch_done(&mut self) -> Result<(), DirectError> {
        match self.refused.take() {
            Some(refused) => Err(refused),
            None => Ok(()),
        }
    }
}

/// What one run has done so far (for the rollback and the failure report).
#[derive(Default)]
pub(super) struct Run {
    pub(super) created: Vec<Json>,
    pub(super) parent_created: Option<(ParentRef, String)>,
    pub(super) instance: Option<Json>,
    /// Every resource was ready (what fails after is pruning).
    pub(super) ready: bool,
}

/// Whether a dry run refused an object only because an earlier object of the same run was
/// not stored: its kind (a CRD of the graph) or its namespace (a Namespace of the graph).
fn unstored_by_dry_run(error: &ApplyError) -> bool {
    match error {
        ApplyError::Kind(_) => true,
        ApplyError::Api(kube::Error::Api(status)) => {
            status.code == 404
                && status
                    .details
                    .as_ref()
                    .is_some_and(|details| details.kind == "namespaces")
        }
        _ => false,
    }
}

/// Why a dry run could not check an object.
fn unchecked_reason(error: &ApplyError) -> String {
    match error {
        ApplyError::Kind(error) => format!(
            "{} {} is not served (a dry run stores no CRD)",
            error.api_version, error.kind
        ),
        ApplyError::Api(error) => format!("{} (a dry run stores no Namespace)", api_message(error)),
        other => other.to_string(),
    }
}
