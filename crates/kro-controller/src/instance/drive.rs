//! The instance controller as a driver of the engine's convergence loop
//! ([`kro_engine::converge`]): it plans with the instance (its `schema` converted once per
//! version of it), observes through the watch caches, widens the inventory on the instance,
//! and records each problem instead of stopping at the first.

use std::convert::Infallible;

use kro_engine::AppliedObject;
use kro_engine::converge::{Batch, Driver, OwnedElsewhere};
use kro_runtime::{Observed, Plan, PlanOptions};

use super::InstanceController;
use super::graph_version::GraphVersion;
use super::observe::fill;
use crate::error::ResourceError;
use crate::object::Object;
use crate::shared::Shared;
use kro_engine::error::ObjectError;

/// One reconcile's drive of the loop.
pub(super) struct InstanceDriver<'a> {
    pub(super) controller: &'a InstanceController,
    pub(super) shared: &'a Shared,
    pub(super) graph: &'a GraphVersion,
    /// The instance, as kro's last write of it answered.
    pub(super) instance: &'a mut Object,
    pub(super) options: PlanOptions,
    /// `schema` as converted from the instance, with the resourceVersion it was converted at
    /// (an inventory write makes a new one).
    pub(super) schema: Option<(String, kro_cel::Value)>,
    pub(super) uid: String,
    pub(super) applyset: String,
    /// The instance asks not to be reconciled: plan, apply nothing.
    pub(super) suspended: bool,
    /// What went wrong so far; once there is anything, nothing more is applied.
    pub(super) problems: &'a mut Vec<ResourceError>,
}

impl Driver for InstanceDriver<'_> {
    type Error = Infallible;

    fn applyset(&self) -> &str {
        &self.applyset
    }

    fn scope(&self) -> &str {
        &self.uid
    }

    async fn plan(&mut self, observed: &Observed) -> Result<Plan, Infallible> {
        let version = self.instance.resource_version().to_owned();
        let converted = match self.schema.take() {
            Some((converted_from, value)) if converted_from == version => value,
            _ => kro_runtime::schema_value(&self.graph.graph, self.instance.json()),
        };
        self.schema = Some((version, converted.clone()));
        Ok(kro_runtime::plan_with_schema(
            &self.graph.graph,
            self.instance.json(),
            converted,
            observed,
            &self.options,
        ))
    }

    async fn fill(&mut self, current: &Plan, observed: &mut Observed) -> Result<bool, Infallible> {
        Ok(fill(
            self.graph,
            current,
            observed,
            &self.controller.applier,
            &self.uid,
        )
        .await)
    }

    fn proceed(&mut self, _current: &Plan) -> Result<bool, Infallible> {
        Ok(!self.suspended && self.problems.is_empty())
    }

    fn owned_elsewhere(&mut self, found: Vec<OwnedElsewhere>) -> Result<(), Infallible> {
        self.problems.extend(
            found
                .into_iter()
                .map(|found| ResourceError::Object(found.into())),
        );
        Ok(())
    }

    async fn widen_inventory(&mut self, current: &Plan, batch: &Batch) -> Result<bool, Infallible> {
        let widened = self
            .controller
            .grow_inventory(
                self.shared,
                self.graph,
                current,
                self.instance,
                batch.objects.iter().map(|desired| &desired.key),
            )
            .await;
        match widened {
            Ok(()) => Ok(true),
            Err(error) => {
                self.problems
                    .push(ResourceError::Inventory(Box::new(error)));
                Ok(false)
            }
        }
    }

    fn applied(&mut self, _batch: &Batch, applied: AppliedObject, observed: &mut Observed) {
        match applied.outcome {
            Ok(outcome) => {
                if let Some(object) = outcome.into_applied() {
                    observed.insert(object);
                }
            }
            Err(source) => self
                .problems
                .push(ResourceError::Object(ObjectError::Apply {
                    key: Box::new(applied.key),
                    level: None,
                    source: Box::new(source),
                })),
        }
    }

    fn batch_done(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}
