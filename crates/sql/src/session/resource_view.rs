//! `tern_stat_resources`: one row of what the resource manager last granted the database
//! (`tern-resources`; NULL where the database does not adapt, or the kernel said nothing) and
//! what the database runs with: the memory limit of the statement reading it and the buffer
//! pool's slots, read when the row is.

use tern_exec::value::Value;
use tern_pagestore::PoolStats;
use tern_resources::{Allotment, MemoryState, Reading};

/// What the resource manager granted last, as the embedding noted it.
pub type Granted = (Allotment, Reading);

/// The relation's one row, in the order of its columns
/// ([`tern_exec::catalog::live::STAT_RESOURCES`]): `granted` (NULLs where there is none), the
/// memory limit of the statement reading it and the pool's slots.
pub fn row(granted: Option<&Granted>, statement_memory_limit: usize, pool: &PoolStats) -> Vec<Value> {
    let integer = |value: Option<u64>| value.map_or(Value::Null, |value| Value::Integer(value as i64));
    let real = |value: Option<f64>| value.map_or(Value::Null, Value::Real);
    let (allotment, reading) = match granted {
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
        Value::Integer(statement_memory_limit as i64),
        Value::Integer(pool.slots as i64),
        Value::Integer(pool.active_slots as i64),
    ]
}
