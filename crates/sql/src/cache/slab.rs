//! A slab allocator for cached items (SQLiteKV's slab-allocation caching, after memcached):
//! memory is cut into equal slabs; each slab belongs to one size class and is an array of equal
//! slots; slot sizes grow geometrically from a minimum to the slab size; an item takes a slot of
//! the smallest class it fits. Each class keeps its items in LRU order and evicts the least
//! recently used when it is full; when a class starves (it needs a slot, memory is exhausted,
//! and another class holds older items or has no items at all) a whole slab moves to it from
//! the class whose least recently used item is oldest.
//!
//! Small items never fragment the heap (every slab is one allocation of the same size), and the
//! memory held is bounded by the number of slabs. What a slot wastes (its size minus the item's)
//! is reported as fragmentation.

/// Sizes of the allocator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlabConfig {
    /// Bytes of slab memory at most (rounded down to whole slabs).
    pub memory: usize,
    /// Bytes of one slab; also the largest slot.
    pub slab_size: usize,
    /// The smallest slot.
    pub min_slot: usize,
    /// Each class's slot is this factor larger than the previous one's (> 1).
    pub growth: f64,
}

impl Default for SlabConfig {
    fn default() -> Self {
        SlabConfig::for_memory(16 << 20)
    }
}

impl SlabConfig {
    /// The configuration for `memory` bytes: 256 slabs (from 16 KiB to 1 MiB each), so that
    /// every class can hold a slab without one class's minimum share being large; slots from
    /// 64 bytes, each class 1.5 times the last.
    pub fn for_memory(memory: usize) -> SlabConfig {
        let slab_size = (memory / 256).clamp(16 << 10, 1 << 20).next_power_of_two();
        SlabConfig { memory, slab_size, min_slot: 64, growth: 1.5 }
    }
}

/// Where an item lives: its class and its slot within the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotRef {
    class: u16,
    slot: u32,
}

/// Counters of one size class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassStats {
    pub slot_size: usize,
    pub slabs: usize,
    pub items: usize,
    /// Bytes of the items stored.
    pub item_bytes: usize,
    /// Bytes of slots holding items, minus `item_bytes`: lost to rounding up to the class size.
    pub wasted_bytes: usize,
    pub evictions: u64,
}

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    prev: u32,
    next: u32,
    /// Length of the item, or `None` for a free slot.
    len: Option<u32>,
    owner: u64,
    last_used: u64,
}

const FREE: Slot = Slot { prev: NIL, next: NIL, len: None, owner: 0, last_used: 0 };

struct Class {
    slot_size: usize,
    slots_per_slab: usize,
    /// The class's slabs; `None` where a slab was moved to another class.
    slabs: Vec<Option<Box<[u8]>>>,
    /// Per slot (slab index * slots_per_slab + slot index).
    slots: Vec<Slot>,
    /// Items per slab.
    used: Vec<u32>,
    free: Vec<u32>,
    /// Most recently used first.
    lru_head: u32,
    lru_tail: u32,
    items: usize,
    item_bytes: usize,
    evictions: u64,
}

impl Class {
    fn unlink(&mut self, slot: u32) {
        let Slot { prev, next, .. } = self.slots[slot as usize];
        match prev {
            NIL => self.lru_head = next,
            prev => self.slots[prev as usize].next = next,
        }
        match next {
            NIL => self.lru_tail = prev,
            next => self.slots[next as usize].prev = prev,
        }
        self.slots[slot as usize].prev = NIL;
        self.slots[slot as usize].next = NIL;
    }

    fn push_front(&mut self, slot: u32) {
        self.slots[slot as usize].prev = NIL;
        self.slots[slot as usize].next = self.lru_head;
        match self.lru_head {
            NIL => self.lru_tail = slot,
            head => self.slots[head as usize].prev = slot,
        }
        self.lru_head = slot;
    }

    /// Frees a used slot; returns its owner.
    fn release(&mut self, slot: u32) -> u64 {
        self.unlink(slot);
        let entry = &mut self.slots[slot as usize];
        let owner = entry.owner;
        self.item_bytes -= entry.len.take().expect("a used slot") as usize;
        self.items -= 1;
        self.used[slot as usize / self.slots_per_slab] -= 1;
        self.free.push(slot);
        owner
    }

    fn bytes(&self, slot: u32) -> &[u8] {
        let slab = slot as usize / self.slots_per_slab;
        let start = (slot as usize % self.slots_per_slab) * self.slot_size;
        let len = self.slots[slot as usize].len.expect("a used slot") as usize;
        &self.slabs[slab].as_ref().expect("a live slab")[start..start + len]
    }

    fn bytes_mut(&mut self, slot: u32) -> &mut [u8] {
        let slab = slot as usize / self.slots_per_slab;
        let start = (slot as usize % self.slots_per_slab) * self.slot_size;
        &mut self.slabs[slab].as_mut().expect("a live slab")[start..start + self.slot_size]
    }

    /// Adds a slab (reusing a hole left by a moved one) and its slots to the free list.
    fn add_slab(&mut self, memory: Box<[u8]>) {
        let index = match self.slabs.iter().position(Option::is_none) {
            Some(hole) => {
                self.slabs[hole] = Some(memory);
                hole
            }
            None => {
                self.slabs.push(Some(memory));
                self.used.push(0);
                self.slots.resize(self.slabs.len() * self.slots_per_slab, FREE);
                self.slabs.len() - 1
            }
        };
        let first = index * self.slots_per_slab;
        // Lowest slot first out of the free list.
        self.free.extend((first..first + self.slots_per_slab).rev().map(|slot| slot as u32));
    }

    /// Takes slab `index` away: its items are evicted (owners appended to `evicted`).
    fn remove_slab(&mut self, index: usize, evicted: &mut Vec<u64>) -> Box<[u8]> {
        let range = index * self.slots_per_slab..(index + 1) * self.slots_per_slab;
        for slot in range.clone() {
            if self.slots[slot].len.is_some() {
                evicted.push(self.release(slot as u32));
                self.evictions += 1;
            }
        }
        self.free.retain(|slot| !range.contains(&(*slot as usize)));
        self.slabs[index].take().expect("a live slab")
    }

    fn live_slabs(&self) -> usize {
        self.slabs.iter().filter(|slab| slab.is_some()).count()
    }

    /// The live slab holding the fewest items (the cheapest to give up), and that count.
    fn emptiest_slab(&self) -> Option<(usize, u32)> {
        (0..self.slabs.len())
            .filter(|&index| self.slabs[index].is_some())
            .map(|index| (index, self.used[index]))
            .min_by_key(|(_, used)| *used)
    }
}

/// The allocator. Not thread-safe: the result cache holds it under a lock.
pub struct SlabAllocator {
    config: SlabConfig,
    classes: Vec<Class>,
    /// Slabs allocated so far, and the most there may be.
    slabs: usize,
    max_slabs: usize,
    /// A logical clock for LRU ages across classes.
    clock: u64,
}

impl SlabAllocator {
    /// An allocator with the given sizes; no memory is taken until items arrive.
    pub fn new(config: SlabConfig) -> SlabAllocator {
        assert!(config.growth > 1.0, "slab classes must grow");
        assert!(config.min_slot >= 8 && config.min_slot <= config.slab_size, "slot sizes within a slab");
        // Slot numbers are u32 (u32::MAX marks list ends).
        assert!(config.memory / config.min_slot < u32::MAX as usize, "a cache of at most 256 GiB with 64-byte slots");
        let mut sizes = Vec::new();
        let mut size = config.min_slot;
        while size < config.slab_size {
            sizes.push(size);
            // Multiples of 8 keep slots aligned; each class strictly larger than the last.
            size = (((size as f64 * config.growth).ceil() as usize).div_ceil(8) * 8).max(size + 8);
        }
        sizes.push(config.slab_size);
        let classes = sizes
            .into_iter()
            .map(|slot_size| Class {
                slot_size,
                slots_per_slab: config.slab_size / slot_size,
                slabs: Vec::new(),
                slots: Vec::new(),
                used: Vec::new(),
                free: Vec::new(),
                lru_head: NIL,
                lru_tail: NIL,
                items: 0,
                item_bytes: 0,
                evictions: 0,
            })
            .collect();
        SlabAllocator { config, classes, slabs: 0, max_slabs: config.memory / config.slab_size, clock: 0 }
    }

    /// The largest item that can be stored.
    pub fn max_item(&self) -> usize {
        self.config.slab_size
    }

    /// Bytes of slab memory allocated.
    pub fn allocated_bytes(&self) -> usize {
        self.slabs * self.config.slab_size
    }

    /// Stores `bytes` for `owner`. Returns where, and the owners of items evicted to make room
    /// (`None` if the item is larger than a slab or there is no memory at all).
    pub fn insert(&mut self, owner: u64, bytes: &[u8]) -> Option<(SlotRef, Vec<u64>)> {
        let class = self.classes.iter().position(|class| class.slot_size >= bytes.len())?;
        let mut evicted = Vec::new();
        let slot = self.free_slot(class, &mut evicted)?;
        self.clock += 1;
        let clock = self.clock;
        let target = &mut self.classes[class];
        target.bytes_mut(slot)[..bytes.len()].copy_from_slice(bytes);
        target.slots[slot as usize] =
            Slot { prev: NIL, next: NIL, len: Some(bytes.len() as u32), owner, last_used: clock };
        target.items += 1;
        target.item_bytes += bytes.len();
        target.used[slot as usize / target.slots_per_slab] += 1;
        target.push_front(slot);
        Some((SlotRef { class: class as u16, slot }, evicted))
    }

    /// A free slot of `class`: from its free list, a new slab, a slab moved from another class,
    /// or its least recently used item.
    fn free_slot(&mut self, class: usize, evicted: &mut Vec<u64>) -> Option<u32> {
        if let Some(slot) = self.classes[class].free.pop() {
            return Some(slot);
        }
        if self.slabs < self.max_slabs {
            self.slabs += 1;
            self.classes[class].add_slab(vec![0u8; self.config.slab_size].into_boxed_slice());
            return self.classes[class].free.pop();
        }
        // Memory is exhausted. A slab another class holds empty moves here for free.
        if let Some((donor, slab)) = self.empty_slab(Some(class)) {
            return Some(self.move_slab(donor, slab, class, evicted));
        }
        // Else move one if this class has none, or if another class's oldest item is older
        // than this class's (what that class holds is colder): the donor gives up its slab
        // with the fewest items.
        let own_tail = match self.classes[class].lru_tail {
            NIL => None,
            tail => Some(self.classes[class].slots[tail as usize].last_used),
        };
        let donor = self.coldest_class(Some(class));
        match (own_tail, donor) {
            (Some(own), Some((_, donor_age))) if own <= donor_age => {}
            (_, Some((donor, _))) => {
                let (slab, _) = self.classes[donor].emptiest_slab().expect("a live slab");
                return Some(self.move_slab(donor, slab, class, evicted));
            }
            (None, None) => return None,
            (Some(_), None) => {}
        }
        let target = &mut self.classes[class];
        let tail = target.lru_tail;
        evicted.push(target.release(tail));
        target.evictions += 1;
        target.free.pop()
    }

    /// Moves slab `slab` of class `from` (evicting its items) to class `to`; returns a free slot
    /// of `to`.
    fn move_slab(&mut self, from: usize, slab: usize, to: usize, evicted: &mut Vec<u64>) -> u32 {
        let memory = self.classes[from].remove_slab(slab, evicted);
        self.classes[to].add_slab(memory);
        self.classes[to].free.pop().expect("a new slab has free slots")
    }

    /// Lets the allocator hold `share` (0 to 1) of its configured slabs, at least one:
    /// past that, whole slabs are freed, the coldest first (an empty slab, else the slab with
    /// the fewest items of the class whose least recently used item is oldest). Returns the
    /// owners of the items evicted. Raising the share only lets later inserts allocate again.
    pub fn set_memory_share(&mut self, share: f64) -> Vec<u64> {
        let share = if share.is_finite() { share.clamp(0.0, 1.0) } else { 1.0 };
        let configured = self.config.memory / self.config.slab_size;
        self.max_slabs = ((configured as f64 * share).ceil() as usize).clamp(configured.min(1), configured);
        let mut evicted = Vec::new();
        while self.slabs > self.max_slabs {
            let Some((class, slab)) = self.coldest_slab() else { break };
            drop(self.classes[class].remove_slab(slab, &mut evicted));
            self.slabs -= 1;
        }
        evicted
    }

    /// The slab to give up first: an empty one, else the emptiest slab of the class whose
    /// least recently used item is oldest.
    fn coldest_slab(&self) -> Option<(usize, usize)> {
        self.empty_slab(None).or_else(|| {
            let (class, _) = self.coldest_class(None)?;
            self.classes[class].emptiest_slab().map(|(slab, _)| (class, slab))
        })
    }

    /// A live slab holding no items, of a class other than `except`: its class and index.
    fn empty_slab(&self, except: Option<usize>) -> Option<(usize, usize)> {
        self.classes.iter().enumerate().filter(|(index, _)| Some(*index) != except).find_map(|(index, class)| {
            class.emptiest_slab().filter(|(_, used)| *used == 0).map(|(slab, _)| (index, slab))
        })
    }

    /// The class other than `except` holding items whose least recently used item is oldest,
    /// and that item's age.
    fn coldest_class(&self, except: Option<usize>) -> Option<(usize, u64)> {
        self.classes
            .iter()
            .enumerate()
            .filter(|(index, class)| Some(*index) != except && class.live_slabs() > 0 && class.lru_tail != NIL)
            .map(|(index, class)| (index, class.slots[class.lru_tail as usize].last_used))
            .min_by_key(|(_, age)| *age)
    }

    /// The bytes of an item; marks it most recently used.
    pub fn get(&mut self, at: SlotRef) -> &[u8] {
        self.clock += 1;
        let clock = self.clock;
        let class = &mut self.classes[at.class as usize];
        class.unlink(at.slot);
        class.push_front(at.slot);
        class.slots[at.slot as usize].last_used = clock;
        class.bytes(at.slot)
    }

    /// Frees an item's slot.
    pub fn remove(&mut self, at: SlotRef) {
        self.classes[at.class as usize].release(at.slot);
    }

    /// Counters per class (classes that never held a slab included).
    pub fn class_stats(&self) -> Vec<ClassStats> {
        self.classes
            .iter()
            .map(|class| ClassStats {
                slot_size: class.slot_size,
                slabs: class.live_slabs(),
                items: class.items,
                item_bytes: class.item_bytes,
                wasted_bytes: class.items * class.slot_size - class.item_bytes,
                evictions: class.evictions,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn small() -> SlabConfig {
        SlabConfig { memory: 4 * 1024, slab_size: 1024, min_slot: 16, growth: 2.0 }
    }

    #[test]
    fn classes_grow_geometrically_up_to_the_slab() {
        let slab = SlabAllocator::new(small());
        let sizes: Vec<usize> = slab.class_stats().iter().map(|class| class.slot_size).collect();
        assert_eq!(sizes, [16, 32, 64, 128, 256, 512, 1024]);
        let slab = SlabAllocator::new(SlabConfig::default());
        let sizes: Vec<usize> = slab.class_stats().iter().map(|class| class.slot_size).collect();
        assert_eq!(sizes[..4], [64, 96, 144, 216]);
        assert_eq!(*sizes.last().unwrap(), 64 << 10, "16 MiB in 256 slabs");
    }

    #[test]
    fn an_item_takes_the_smallest_class_it_fits_and_too_large_ones_are_refused() {
        let mut slab = SlabAllocator::new(small());
        let (at, evicted) = slab.insert(1, &[7; 17]).unwrap();
        assert!(evicted.is_empty());
        assert_eq!(slab.get(at), &[7; 17]);
        let stats = slab.class_stats();
        assert_eq!((stats[1].items, stats[1].item_bytes, stats[1].wasted_bytes), (1, 17, 15));
        assert!(slab.insert(2, &[0; 1025]).is_none());
        assert_eq!(slab.allocated_bytes(), 1024);
    }

    #[test]
    fn a_full_class_evicts_its_least_recently_used_item() {
        let mut slab = SlabAllocator::new(SlabConfig { memory: 1024, ..small() });
        // One slab of 4 slots of 256 bytes.
        let refs: Vec<SlotRef> = (0..4).map(|owner| slab.insert(owner, &[owner as u8; 200]).unwrap().0).collect();
        slab.get(refs[0]); // 1 is now the least recently used
        let (_, evicted) = slab.insert(9, &[9; 200]).unwrap();
        assert_eq!(evicted, [1]);
        assert_eq!(slab.class_stats()[4].evictions, 1);
    }

    #[test]
    fn a_starving_class_takes_a_slab_from_the_coldest_class() {
        let mut slab = SlabAllocator::new(SlabConfig { memory: 2048, ..small() });
        // Two slabs, both holding 16-byte items.
        for owner in 0..128 {
            slab.insert(owner, &[1; 16]).unwrap();
        }
        assert_eq!(slab.class_stats()[0].slabs, 2);
        // A 512-byte class has no slab: it gets the one holding the oldest 16-byte items.
        let (_, evicted) = slab.insert(1000, &[2; 500]).unwrap();
        assert_eq!(evicted, (0..64).collect::<Vec<u64>>());
        let stats = slab.class_stats();
        assert_eq!((stats[0].slabs, stats[5].slabs, stats[5].items), (1, 1, 1));
        assert_eq!(slab.allocated_bytes(), 2048, "no memory beyond the budget");
    }

    #[test]
    fn a_lowered_share_frees_the_coldest_slabs_and_a_raised_one_lets_them_grow_back() {
        let mut slab = SlabAllocator::new(SlabConfig { memory: 4096, ..small() });
        // Four slabs: two of 16-byte items (the older), one of 512-byte, one of 1024-byte.
        let mut refs = HashMap::new();
        for owner in 0..128 {
            refs.insert(owner, slab.insert(owner, &[1; 16]).unwrap().0);
        }
        refs.insert(500, slab.insert(500, &[2; 500]).unwrap().0);
        refs.insert(900, slab.insert(900, &[3; 900]).unwrap().0);
        assert_eq!(slab.allocated_bytes(), 4096);
        let evicted = slab.set_memory_share(0.5);
        assert_eq!(slab.allocated_bytes(), 2048);
        assert_eq!(evicted.len(), 128, "the two slabs of the oldest items go");
        assert!(evicted.iter().all(|owner| *owner < 128));
        assert_eq!(slab.get(refs[&500]), &[2; 500]);
        assert_eq!(slab.get(refs[&900]), &[3; 900]);
        // Held to two slabs: a new class's item evicts rather than allocates.
        slab.insert(1000, &[4; 200]).unwrap();
        assert_eq!(slab.allocated_bytes(), 2048);
        // Never below one slab; raised, it allocates again.
        slab.set_memory_share(0.0);
        assert_eq!(slab.allocated_bytes(), 1024);
        slab.set_memory_share(1.0);
        for owner in 2000..2064 {
            slab.insert(owner, &[5; 16]).unwrap();
        }
        assert!(slab.allocated_bytes() > 1024);
        assert!(slab.allocated_bytes() <= 4096);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(usize),
        Get(usize),
        Remove(usize),
        /// Lets the allocator hold this many quarters of its slabs.
        Share(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (1usize..1100).prop_map(Op::Insert),
            2 => any::<usize>().prop_map(Op::Get),
            1 => any::<usize>().prop_map(Op::Remove),
            1 => (0..=4u8).prop_map(Op::Share),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Every item still in the allocator reads back as stored; evictions only take items
        /// that were there; memory never exceeds the limit; the counters add up.
        #[test]
        fn matches_a_map_of_live_items(ops in proptest::collection::vec(op(), 1..300)) {
            let mut slab = SlabAllocator::new(small());
            let mut model: HashMap<u64, (SlotRef, Vec<u8>)> = HashMap::new();
            let mut next = 0u64;
            let mut limit = 4096;
            for op in ops {
                match op {
                    Op::Insert(len) => {
                        next += 1;
                        let bytes: Vec<u8> = (0..len).map(|i| (i as u64 * 31 + next) as u8).collect();
                        match slab.insert(next, &bytes) {
                            Some((at, evicted)) => {
                                for owner in evicted {
                                    prop_assert!(model.remove(&owner).is_some(), "evicted an unknown item {}", owner);
                                }
                                model.insert(next, (at, bytes));
                            }
                            None => prop_assert!(len > 1024),
                        }
                    }
                    Op::Get(pick) if !model.is_empty() => {
                        let mut owners: Vec<&u64> = model.keys().collect();
                        owners.sort();
                        let owner = *owners[pick % owners.len()];
                        let (at, bytes) = &model[&owner];
                        prop_assert_eq!(slab.get(*at), bytes.as_slice());
                    }
                    Op::Remove(pick) if !model.is_empty() => {
                        let mut owners: Vec<u64> = model.keys().copied().collect();
                        owners.sort();
                        let owner = owners[pick % owners.len()];
                        let (at, _) = model.remove(&owner).unwrap();
                        slab.remove(at);
                    }
                    Op::Share(quarters) => {
                        for owner in slab.set_memory_share(quarters as f64 / 4.0) {
                            prop_assert!(model.remove(&owner).is_some(), "freed an unknown item {}", owner);
                        }
                        limit = (quarters as usize * 1024).max(1024);
                    }
                    _ => {}
                }
                prop_assert!(slab.allocated_bytes() <= limit);
                let stats = slab.class_stats();
                prop_assert_eq!(stats.iter().map(|class| class.items).sum::<usize>(), model.len());
                prop_assert_eq!(
                    stats.iter().map(|class| class.item_bytes).sum::<usize>(),
                    model.values().map(|(_, bytes)| bytes.len()).sum::<usize>()
                );
                prop_assert!(stats.iter().map(|class| class.slabs).sum::<usize>() * 1024 == slab.allocated_bytes());
            }
            for (at, bytes) in model.values() {
                prop_assert_eq!(slab.get(*at), bytes.as_slice());
            }
        }
    }
}
