//! The compressed type map: an ordered list of items, each a run of one basic kind at a byte
//! displacement or a strided repetition of a shared sub-map, plus the walker that visits the
//! contiguous pieces of any byte window of the packed stream in type-map order. Pure data;
//! knows nothing of bounds set by `resized` (those live in [`super::TypeMap`]).

use super::BasicKind;
use std::sync::Arc;
use weft_core::{Error, ErrorKind, Result};

/// Largest byte quantity a type may describe: displacements and sizes must fit `MPI_Aint`.
const MAX_BYTES: i128 = i64::MAX as i128;

/// A sub-map with at most this many items placed once is copied inline (shifted) rather than
/// referenced, so that small nested types flatten into runs that can merge.
const INLINE_ITEMS: usize = 16;

/// One entry of a compressed type map.
#[derive(Debug)]
pub(super) enum Item {
    /// `count` consecutive elements of `kind` starting at byte `disp`.
    Run {
        disp: i64,
        kind: BasicKind,
        count: u64,
    },
    /// `count` copies of `body`, copy `j` at `disp + j * stride`.
    Rep {
        disp: i64,
        count: u64,
        stride: i64,
        body: Arc<Body>,
    },
}

/// A type map's data without its bounds: items in type-map order and what is derived from
/// them once at construction.
#[derive(Debug)]
pub(super) struct Body {
    pub(super) items: Vec<Item>,
    /// `ends[i]`: packed bytes of items `0..=i` (for finding a stream position).
    ends: Vec<u64>,
    /// Packed bytes (MPI_Type_size).
    pub(super) size: u64,
    /// Basic elements.
    pub(super) elements: u64,
    /// Where the data starts when it is one gap-free byte range in type-map order.
    pub(super) contiguous_at: Option<i64>,
    /// `[lo, hi)` of the bytes the data touches (None without data).
    pub(super) true_bounds: Option<(i64, i64)>,
}

fn overflow(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidCount,
        format!("{what} overflows the address range (more than 2^63 bytes)"),
    )
}

fn fit(v: i128, what: &str) -> Result<i64> {
    if (-MAX_BYTES..=MAX_BYTES).contains(&v) {
        Ok(v as i64)
    } else {
        Err(overflow(what))
    }
}

/// Collects items in type-map order, merging adjacent runs of one kind.
#[derive(Default)]
pub(super) struct Builder {
    items: Vec<Item>,
}

impl Builder {
    /// Appends `count` copies of `body`, copy `j` at byte `disp + j * stride`.
    pub(super) fn place(
        &mut self,
        disp: i64,
        count: u64,
        stride: i64,
        body: &Arc<Body>,
    ) -> Result<()> {
        if count == 0 || body.size == 0 {
            return Ok(());
        }
        if count as i128 * body.size as i128 > MAX_BYTES {
            return Err(overflow("type size"));
        }
        if let [Item::Run {
            disp: d0,
            kind,
            count: n,
        }] = body.items[..]
        {
            // Copies of one run that touch end to end are a longer run.
            if count == 1 || stride as i128 == n as i128 * kind.size_bytes() as i128 {
                let d = fit(disp as i128 + d0 as i128, "displacement")?;
                self.push_run(d, kind, n * count);
                return Ok(());
            }
        }
        if count == 1 && body.items.len() <= INLINE_ITEMS {
            for item in &body.items {
                match item {
                    Item::Run {
                        disp: d0,
                        kind,
                        count: n,
                    } => {
                        let d = fit(disp as i128 + *d0 as i128, "displacement")?;
                        self.push_run(d, *kind, *n);
                    }
                    Item::Rep {
                        disp: d0,
                        count: c,
                        stride: s,
                        body: b,
                    } => {
                        let d = fit(disp as i128 + *d0 as i128, "displacement")?;
                        self.items.push(Item::Rep {
                            disp: d,
                            count: *c,
                            stride: *s,
                            body: b.clone(),
                        });
                    }
                }
            }
            return Ok(());
        }
        self.items.push(Item::Rep {
            disp,
            count,
            stride,
            body: body.clone(),
        });
        Ok(())
    }

    /// Appends `count` elements of `kind` at `disp`, extending the previous run if it ends
    /// exactly there with the same kind.
    pub(super) fn push_run(&mut self, disp: i64, kind: BasicKind, count: u64) {
        if count == 0 {
            return;
        }
        if let Some(Item::Run {
            disp: d,
            kind: k,
            count: n,
        }) = self.items.last_mut()
        {
            if *k == kind && *d as i128 + *n as i128 * kind.size_bytes() as i128 == disp as i128 {
                *n += count;
                return;
            }
        }
        self.items.push(Item::Run { disp, kind, count });
    }

    /// Derives sizes, bounds and contiguity; fails when a size or bound leaves `MPI_Aint`.
    pub(super) fn finish(self) -> Result<Arc<Body>> {
        let mut ends = Vec::with_capacity(self.items.len());
        let mut size: i128 = 0;
        let mut elements: i128 = 0;
        let mut bounds: Option<(i128, i128)> = None;
        // Contiguity: every item is gap-free and starts where the previous one ended.
        let mut contiguous = true;
        let mut contiguous_at: Option<i128> = None;
        let mut next: Option<i128> = None;
        for item in &self.items {
            let (bytes, elems, lo, hi, start) = match item {
                Item::Run { disp, kind, count } => {
                    let bytes = *count as i128 * kind.size_bytes() as i128;
                    let d = *disp as i128;
                    (bytes, *count as i128, d, d + bytes, Some(d))
                }
                Item::Rep {
                    disp,
                    count,
                    stride,
                    body,
                } => {
                    let (blo, bhi) = body.true_bounds.expect("placed bodies hold data");
                    let span = (*count as i128 - 1) * *stride as i128;
                    let d = *disp as i128;
                    let start = match body.contiguous_at {
                        Some(c) if *count == 1 || *stride as i128 == body.size as i128 => {
                            Some(d + c as i128)
                        }
                        _ => None,
                    };
                    (
                        *count as i128 * body.size as i128,
                        *count as i128 * body.elements as i128,
                        d + blo as i128 + span.min(0),
                        d + bhi as i128 + span.max(0),
                        start,
                    )
                }
            };
            match (start, next) {
                (Some(s), None) if contiguous_at.is_none() => contiguous_at = Some(s),
                (Some(s), Some(n)) if s == n => {}
                _ => contiguous = false,
            }
            next = start.map(|s| s + bytes);
            size += bytes;
            elements += elems;
            if size > MAX_BYTES {
                return Err(overflow("type size"));
            }
            ends.push(size as u64);
            bounds = Some(match bounds {
                None => (lo, hi),
                Some((a, b)) => (a.min(lo), b.max(hi)),
            });
        }
        let true_bounds = match bounds {
            Some((lo, hi)) => Some((fit(lo, "type lower bound")?, fit(hi, "type upper bound")?)),
            None => None,
        };
        let contiguous_at = if contiguous {
            contiguous_at.map(|c| c as i64)
        } else {
            None
        };
        Ok(Arc::new(Body {
            items: self.items,
            ends,
            size: size as u64,
            elements: elements as u64,
            contiguous_at: if size == 0 { Some(0) } else { contiguous_at },
            true_bounds,
        }))
    }
}

/// What a walk over the packed stream does with each contiguous piece of memory.
pub(super) trait Visit {
    /// `len` bytes at byte `at` of the buffer, of basic kind `kind` (a piece may end inside
    /// an element when the window does).
    fn piece(&mut self, at: i64, len: usize, kind: BasicKind);

    /// `reps` pieces of `len` bytes, the `j`-th at `at + j * stride` (a strided run: the
    /// inner loop of vectors, worth specialising).
    fn strided(&mut self, at: i64, stride: i64, len: usize, reps: u64, kind: BasicKind) {
        for j in 0..reps {
            self.piece(at.wrapping_add((j as i64).wrapping_mul(stride)), len, kind);
        }
    }
}

impl Body {
    /// Basic elements in the first `take` packed bytes (`take <= size`), or `None` when
    /// they end inside an element. Whole copies of a repetition count at once, so this costs
    /// the nesting depth times the items, not the bytes.
    pub(super) fn elements_in_prefix(&self, take: u64) -> Option<u64> {
        let mut n = 0u64;
        let mut take = take;
        for item in &self.items {
            if take == 0 {
                break;
            }
            match item {
                Item::Run { kind, count, .. } => {
                    let k = kind.size_bytes();
                    let t = take.min(count * k);
                    if !t.is_multiple_of(k) {
                        return None;
                    }
                    n += t / k;
                    take -= t;
                }
                Item::Rep { count, body, .. } => {
                    let t = take.min(count * body.size);
                    n += t / body.size * body.elements;
                    let rem = t % body.size;
                    if rem > 0 {
                        n += body.elements_in_prefix(rem)?;
                    }
                    take -= t;
                }
            }
        }
        Some(n)
    }

    /// Visits each contiguous piece of the packed bytes `skip..skip + take` of one item
    /// placed at `base`, in type-map order (a piece never spans two runs). Requires
    /// `skip + take <= self.size`.
    ///
    /// Addresses use wrapping arithmetic: the intermediate origin of a nested copy may lie
    /// far outside the buffer, but every piece reported is inside the footprint the caller
    /// checked, and wrapping sums are exact whenever the final value is representable.
    pub(super) fn walk<V: Visit>(&self, base: i64, skip: u64, take: u64, v: &mut V) {
        debug_assert!(skip + take <= self.size);
        let mut i = if skip == 0 {
            0
        } else {
            self.ends.partition_point(|&e| e <= skip)
        };
        let mut skip = skip - if i == 0 { 0 } else { self.ends[i - 1] };
        let mut take = take;
        while take > 0 {
            match &self.items[i] {
                Item::Run { disp, kind, count } => {
                    let n = (count * kind.size_bytes() - skip).min(take);
                    v.piece(
                        base.wrapping_add(*disp).wrapping_add(skip as i64),
                        n as usize,
                        *kind,
                    );
                    take -= n;
                }
                Item::Rep {
                    disp,
                    count,
                    stride,
                    body,
                } => {
                    let bs = body.size;
                    let start = base.wrapping_add(*disp);
                    let mut j = skip / bs;
                    let mut s = skip % bs;
                    let at = |j: u64| start.wrapping_add((j as i64).wrapping_mul(*stride));
                    if let [Item::Run { disp: d0, kind, .. }] = body.items[..] {
                        // A strided run (vector of a basic type): whole copies in one batch,
                        // a partial one at either end of the window piece by piece.
                        if s > 0 {
                            let n = (bs - s).min(take);
                            v.piece(
                                at(j).wrapping_add(d0).wrapping_add(s as i64),
                                n as usize,
                                kind,
                            );
                            take -= n;
                            j += 1;
                        }
                        let reps = (take / bs).min(count - j.min(*count));
                        if reps > 0 {
                            v.strided(at(j).wrapping_add(d0), *stride, bs as usize, reps, kind);
                            take -= reps * bs;
                            j += reps;
                        }
                        if take > 0 && j < *count {
                            let n = bs.min(take);
                            v.piece(at(j).wrapping_add(d0), n as usize, kind);
                            take -= n;
                        }
                    } else {
                        while j < *count && take > 0 {
                            let n = (bs - s).min(take);
                            body.walk(at(j), s, n, v);
                            take -= n;
                            s = 0;
                            j += 1;
                        }
                    }
                }
            }
            skip = 0;
            i += 1;
        }
    }
}
