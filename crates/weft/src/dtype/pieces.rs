//! Where a window of the packed stream lies: the byte ranges that packed bytes
//! `skip..skip + take` of consecutive items occupy (item `e` at `e * extent`), in type-map
//! order, as strided runs. File views (MPI-4.1 §14.3) map a file's data stream through a
//! filetype this way; a contiguous type is one run whatever the count.

use super::map::Visit;
use super::{BasicKind, TypeMap};

/// Passes each contiguous piece (and each batch of equal strided pieces) to a closure.
struct Runs<F: FnMut(i64, u64, i64, u64)>(F);

impl<F: FnMut(i64, u64, i64, u64)> Visit for Runs<F> {
    fn piece(&mut self, at: i64, len: usize, _kind: BasicKind) {
        (self.0)(at, len as u64, 0, 1);
    }

    fn strided(&mut self, at: i64, stride: i64, len: usize, reps: u64, _kind: BasicKind) {
        (self.0)(at, len as u64, stride, reps);
    }
}

impl TypeMap {
    /// Visits the byte ranges of packed bytes `skip..skip + take` of consecutive items (item
    /// `e` placed at `e * extent`), in type-map order: `f(at, len, stride, reps)` stands for
    /// `reps` ranges of `len` bytes, the `j`-th at `at + j * stride` (`reps` is 1 for a
    /// single range). Addresses are relative to the first item's address. Costs the pieces
    /// visited (strided runs count once), and a single range for a contiguous type.
    pub fn visit_runs(&self, skip: u64, take: u64, f: impl FnMut(i64, u64, i64, u64)) {
        let mut runs = Runs(f);
        let size = self.size_bytes();
        if take == 0 || size == 0 {
            return;
        }
        if self.is_contiguous() {
            // Items follow each other without gaps: one range.
            let at = self.true_lb();
            (runs.0)(at.wrapping_add(skip as i64), take, 0, 1);
            return;
        }
        self.walk_items(0, skip, take, &mut runs);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BasicKind, TypeMap};

    fn runs(t: &TypeMap, skip: u64, take: u64) -> Vec<(i64, u64, i64, u64)> {
        let mut v = Vec::new();
        t.visit_runs(skip, take, |a, l, s, r| v.push((a, l, s, r)));
        v
    }

    /// Expands runs into single ranges.
    fn flat(r: &[(i64, u64, i64, u64)]) -> Vec<(i64, u64)> {
        r.iter()
            .flat_map(|&(a, l, s, n)| (0..n).map(move |j| (a + j as i64 * s, l)))
            .collect()
    }

    #[test]
    fn contiguous_types_are_one_run() {
        let b = TypeMap::basic(BasicKind::Byte);
        assert_eq!(runs(&b, 5, 1000), [(5, 1000, 0, 1)]);
        let i = TypeMap::contiguous(3, &TypeMap::basic(BasicKind::I32)).unwrap();
        assert_eq!(runs(&i, 13, 30), [(13, 30, 0, 1)]);
        assert!(runs(&i, 0, 0).is_empty());
    }

    #[test]
    fn vectors_and_resized_types_tile() {
        let int = TypeMap::basic(BasicKind::I32);
        // 2 blocks of 1 int, stride 3 ints: data at 0 and 12; extent 16.
        let v = TypeMap::vector(2, 1, 3, &int).unwrap();
        assert_eq!(flat(&runs(&v, 0, 16)), [(0, 4), (12, 4), (16, 4), (28, 4)]);
        // A window starting inside an element and ending inside another.
        assert_eq!(flat(&runs(&v, 2, 8)), [(2, 2), (12, 4), (16, 2)]);
        // One int at byte 8 of an item of extent 32 (a rank's block of a strided file).
        let r = TypeMap::resized(&TypeMap::hindexed(&[1], &[8], &int).unwrap(), 0, 32).unwrap();
        assert_eq!(flat(&runs(&r, 4, 8)), [(40, 4), (72, 4)]);
    }
}
