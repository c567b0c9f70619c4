//! Cost accounting: every evaluation runs under a budget, so no expression can run for long or
//! allocate without bound.
//!
//! The unit is roughly "one simple operation", and stands for well under 100 ns of work (the
//! adversarial bench checks this: no expression may run 100 ms on the default budget). Reading
//! a variable, selecting a field, calling a function and each comprehension iteration cost 1;
//! creating a list costs 1 plus its size, a map [`MAP_CREATE_COST`] plus its size; functions
//! that walk strings, lists or maps charge in proportion to what they walk (one unit per
//! [`TRAVERSAL_UNIT`] bytes or elements), comparing list elements or map entries one unit per
//! [`ELEMENTS_PER_COMPARE_UNIT`], and copying list elements into a new list one unit per
//! [`ELEMENTS_PER_COPY_UNIT`]. Allocation is always charged, so an
//! expression that tries to build huge values runs out of budget long before memory.

use crate::error::{EvalError, EvalErrorKind};

/// Bytes or elements walked per unit of cost.
pub const TRAVERSAL_UNIT: u64 = 10;

/// The cost of creating a map (a map or object literal), beside one unit per entry: building
/// a hash table takes several allocations. cel-go charges 30.
pub const MAP_CREATE_COST: u64 = 10;

/// The default budget per evaluation: the same order as Kubernetes' per-expression limit.
pub const DEFAULT_COST_LIMIT: u64 = 1_000_000;

/// List elements copied per unit of cost: copying an element into a new list (and dropping
/// it with the list later) costs as much as creating one, and creating an element costs a
/// unit.
pub const ELEMENTS_PER_COPY_UNIT: u64 = 1;

/// The cost of copying `count` list elements into a new list (concatenation, edits, slices).
pub fn copy_cost(count: usize) -> u64 {
    (count as u64).div_ceil(ELEMENTS_PER_COPY_UNIT)
}

/// List elements or map entries compared per unit of cost (equality, membership, searches):
/// comparing two values takes several times longer than walking one byte.
pub const ELEMENTS_PER_COMPARE_UNIT: u64 = 4;

/// The cost of comparing `count` list elements or map entries with others.
pub fn compare_cost(count: usize) -> u64 {
    (count as u64).div_ceil(ELEMENTS_PER_COMPARE_UNIT)
}

/// The cost of walking `size` bytes or elements.
pub fn traversal_cost(size: usize) -> u64 {
    (size as u64).div_ceil(TRAVERSAL_UNIT)
}

/// The remaining budget of one evaluation.
#[derive(Debug, Clone)]
pub struct Budget {
    limit: u64,
    used: u64,
}

impl Budget {
    /// A budget of `limit` units; `None` means unlimited.
    pub fn new(limit: Option<u64>) -> Self {
        Budget {
            limit: limit.unwrap_or(u64::MAX),
            used: 0,
        }
    }

    /// Spends `amount` units.
    ///
    /// # Errors
    /// `CostLimitExceeded` once the total passes the limit.
    #[inline]
    pub fn charge(&mut self, amount: u64) -> Result<(), EvalError> {
        self.used = self.used.saturating_add(amount);
        if self.used > self.limit {
            return Err(self.exhausted_error());
        }
        Ok(())
    }

    /// Whether the budget has run out: once it has, the evaluation's result is a cost error
    /// whatever `&&`, `||` or a comprehension made of the errors on the way.
    pub fn is_exhausted(&self) -> bool {
        self.used > self.limit
    }

    /// The error for an exhausted budget.
    pub fn exhausted_error(&self) -> EvalError {
        EvalError::new(EvalErrorKind::CostLimitExceeded { limit: self.limit })
    }

    /// Units spent so far.
    pub fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charging_past_the_limit_fails() {
        let mut budget = Budget::new(Some(10));
        budget.charge(10).expect("within the limit");
        assert_eq!(budget.used(), 10);
        let error = budget.charge(1).expect_err("over the limit");
        assert_eq!(
            error.kind(),
            &EvalErrorKind::CostLimitExceeded { limit: 10 }
        );
    }

    #[test]
    fn copying_is_charged_per_element() {
        assert_eq!(copy_cost(0), 0);
        assert_eq!(copy_cost(3), 3);
    }

    #[test]
    fn traversal_is_charged_per_ten_units() {
        assert_eq!(traversal_cost(0), 0);
        assert_eq!(traversal_cost(1), 1);
        assert_eq!(traversal_cost(25), 3);
    }
}
