//! `tern_stat_resources`: one row of what the resource manager last granted the database
//! (`tern-resources`; NULL where the database does not adapt, or the kernel said nothing) and
//! what the database made of it: the memory a statement may take now and the buffer pool
//! slots it may fill.

use tern_exec::value::Value;
use tern_resources::{Allotment, MemoryState, Reading};

/// The last allotment and reading, and the sizes in force.
#[derive(Debug, Clone, Default)]
pub struct ResourceView {
    pub granted: Option<(Allotment, Reading)>,
    pub statement_memory_limit: usize,
    pub pool_slots: u64,
    pub pool_active_slots: u64,
}

impl ResourceView {
    /// The relation's one row, in the order of its columns ([`tern_exec::catalog::live::STAT_RESOURCES`]).
    pub fn row(&self) -> Vec<Value> {
        let integer = |value: Option<u64>| value.map_or(Value::Null, |value| Value::Integer(value as i64));
        let real = |value: Option<f64>| value.map_or(Value::Null, Value::Real);
        let (allotment, reading) = match &self.granted {
            Some((allotment, reading)) => (Some(allotment), Some(reading)),
            None => (None, None),
        };
        let count = |pick: fn(&Allotment) -> usize| integer(allotment.map(|allotment| pick(allotment) as u64));
        let state = allotment.map(|allotment| match allotment.memory {
            MemoryState::Ample => "ample",
            MemoryState::Tight => "tight",
            MemoryState::Critical => "critical",
        });
        let pressure = reading.map(|reading| reading.pressure).unwrap_or_default();
        vec![
            count(|allotment| allotment.cores),
            count(|allotment| allotment.workers),
            count(|allotment| allotment.scan_threads),
            count(|allotment| allotment.partitions),
            state.map_or(Value::Null, |state| Value::Text(state.into())),
            integer(allotment.and_then(|allotment| allotment.memory_ceiling)),
            integer(reading.and_then(|reading| reading.cgroup.memory_limit)),
            integer(reading.and_then(|reading| reading.cgroup.memory_used)),
            real(reading.and_then(|reading| reading.cgroup.cpu_quota)),
            real(pressure.cpu.map(|stall| stall.some)),
            real(pressure.memory.map(|stall| stall.some)),
            real(pressure.io.map(|stall| stall.some)),
            Value::Integer(self.statement_memory_limit as i64),
            Value::Integer(self.pool_slots as i64),
            Value::Integer(self.pool_active_slots as i64),
        ]
    }
}
