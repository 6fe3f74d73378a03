//! The free slots of one partition: a bitset over the partition's local slot indices
//! (slot `partition + index * N`). A bitset rather than a stack so that a miss can ask for a
//! particular slot: page `q` prefers local index `(q / N) mod slots`, which in one memory
//! region is frame `q`, so consecutive pages sit in consecutive frames and a warm sequential
//! scan streams through memory in order, however the pool was emptied before.

/// A set of free local slot indices.
pub struct FreeSlots {
    bits: Vec<u64>,
    count: usize,
    /// No free index lies in a word below this one.
    lowest_word: usize,
}

impl FreeSlots {
    /// All `count` indices free.
    pub fn full(count: usize) -> Self {
        let mut bits = vec![u64::MAX; count.div_ceil(64)];
        if !count.is_multiple_of(64) {
            *bits.last_mut().expect("at least one word") = (1 << (count % 64)) - 1;
        }
        Self { bits, count, lowest_word: 0 }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    #[cfg(test)]
    pub fn contains(&self, index: usize) -> bool {
        self.bits[index / 64] & (1 << (index % 64)) != 0
    }

    pub fn insert(&mut self, index: usize) {
        let word = &mut self.bits[index / 64];
        let mask = 1 << (index % 64);
        assert_eq!(*word & mask, 0, "slot index {index} freed twice");
        *word |= mask;
        self.count += 1;
        self.lowest_word = self.lowest_word.min(index / 64);
    }

    /// Takes `index` if it is free.
    pub fn take(&mut self, index: usize) -> bool {
        let word = &mut self.bits[index / 64];
        let mask = 1 << (index % 64);
        if *word & mask == 0 {
            return false;
        }
        *word &= !mask;
        self.count -= 1;
        true
    }

    /// Takes the lowest free index.
    pub fn take_lowest(&mut self) -> Option<usize> {
        while self.lowest_word < self.bits.len() {
            let word = self.bits[self.lowest_word];
            if word != 0 {
                let index = self.lowest_word * 64 + word.trailing_zeros() as usize;
                let taken = self.take(index);
                debug_assert!(taken);
                return Some(index);
            }
            self.lowest_word += 1;
        }
        None
    }

    /// Free indices in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.iter().enumerate().flat_map(|(word_index, &word)| {
            (0..64).filter(move |bit| word & (1 << bit) != 0).map(move |bit| word_index * 64 + bit)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn behaves_like_a_set() {
        let mut free = FreeSlots::full(130);
        let mut model: BTreeSet<usize> = (0..130).collect();
        assert_eq!(free.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
        for step in 0..2000usize {
            let index = (step * 7919) % 130;
            match step % 3 {
                0 => assert_eq!(free.take(index), model.remove(&index)),
                1 => assert_eq!(free.take_lowest(), model.pop_first()),
                _ => {
                    if !model.contains(&index) {
                        free.insert(index);
                        model.insert(index);
                    }
                }
            }
            assert_eq!(free.len(), model.len());
            assert_eq!(free.contains(index), model.contains(&index));
        }
        assert_eq!(free.iter().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
    }
}
