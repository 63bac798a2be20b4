//! Datatype decoding (MPI-4.1 §5.1.13): MPI_Type_get_envelope and MPI_Type_get_contents,
//! with their large-count forms. weft's type maps keep the constructor and its arguments
//! ([`weft::dtype::Combiner`]) but the old types only as maps; this module records, per
//! derived handle, the handles its constructor was given, so that predefined old types come
//! back as themselves and derived ones as new handles (equivalent types the caller frees)
//! that can be decoded in turn even after the caller freed the originals.
//! Depends on the state tables and dtype.rs.

use crate::consts::*;
use crate::dtype::{map_of, predefined, put, Counts};
use crate::error::{err, finish, R};
use crate::state::{handle_index, make_handle, state, Derived, K_TYPE};
use std::collections::BTreeMap;
use std::os::raw::c_int;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use weft::dtype::{Combiner, Distribution, Order, TypeMap};

// Combiners, orders and distributions (mpi.h of the standard ABI).
const MPI_COMBINER_NAMED: c_int = 101;
const MPI_COMBINER_DUP: c_int = 102;
const MPI_COMBINER_CONTIGUOUS: c_int = 103;
const MPI_COMBINER_VECTOR: c_int = 104;
const MPI_COMBINER_HVECTOR: c_int = 105;
const MPI_COMBINER_INDEXED: c_int = 106;
const MPI_COMBINER_HINDEXED: c_int = 107;
const MPI_COMBINER_INDEXED_BLOCK: c_int = 108;
const MPI_COMBINER_HINDEXED_BLOCK: c_int = 109;
const MPI_COMBINER_STRUCT: c_int = 110;
const MPI_COMBINER_SUBARRAY: c_int = 111;
const MPI_COMBINER_DARRAY: c_int = 112;
const MPI_COMBINER_RESIZED: c_int = 116;
const MPI_ORDER_C: c_int = 12;
const MPI_ORDER_FORTRAN: c_int = 15;
const MPI_DISTRIBUTE_NONE: c_int = 16;
const MPI_DISTRIBUTE_BLOCK: c_int = 17;
const MPI_DISTRIBUTE_CYCLIC: c_int = 18;
const MPI_DISTRIBUTE_DFLT_DARG: c_int = 19;

/// An old type given to a constructor.
#[derive(Clone)]
enum Old {
    /// A predefined datatype: returned as itself.
    Named(Handle),
    /// A derived datatype as it was at construction time: returned as a new handle.
    Derived(Arc<Node>),
}

/// A derived type's map, commit state, the old types of its constructor, in argument
/// order, and whether that constructor was an `int` or a large-count (`_c`) form.
struct Node {
    map: TypeMap,
    committed: bool,
    olds: Vec<Old>,
    counts: Counts,
}

/// The old types of every live derived handle the program created (MPI calls are
/// serialized: MPI_THREAD_SERIALIZED at most, so the lock is never contended).
static RECORDS: Mutex<BTreeMap<Handle, Arc<Node>>> = Mutex::new(BTreeMap::new());

fn records() -> std::sync::MutexGuard<'static, BTreeMap<Handle, Arc<Node>>> {
    RECORDS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The record of a live handle as an old type of a new constructor.
fn old_of(h: Handle) -> R<Old> {
    // f90 types (MPI_Type_create_f90_*) stand for a predefined type, as named ones do.
    if predefined(h).is_some() || crate::fortran::is_f90(h) {
        return Ok(Old::Named(h));
    }
    let committed = handle_index(K_TYPE, h)
        .and_then(|i| state("datatype").ok()?.types.get(i).map(|d| d.committed))
        .unwrap_or(false);
    match records().get(&h) {
        Some(n) => Ok(Old::Derived(Arc::new(Node {
            map: n.map.clone(),
            committed,
            olds: n.olds.clone(),
            counts: n.counts,
        }))),
        None => Err(err(
            MPI_ERR_TYPE,
            format!("datatype handle {h:#x} is not a valid datatype"),
        )),
    }
}

/// Records that derived handle `h` (just created with `map`) was built from `olds` by a
/// constructor of family `counts`.
pub(crate) fn record(h: Handle, map: &TypeMap, olds: &[Handle], counts: Counts) -> R<()> {
    let olds = olds.iter().map(|&o| old_of(o)).collect::<R<Vec<_>>>()?;
    records().insert(
        h,
        Arc::new(Node {
            map: map.clone(),
            committed: false,
            olds,
            counts,
        }),
    );
    Ok(())
}

/// Forgets freed handle `h`.
pub(crate) fn forget(h: Handle) {
    records().remove(&h);
}

/// A decoded constructor call: the combiner and the four argument arrays of MPI-4.1
/// Table 5.1 (integers, addresses, large counts, datatypes).
struct Decoded {
    combiner: c_int,
    ints: Vec<i64>,
    addrs: Vec<i64>,
    large: Vec<i64>,
    olds: Vec<Old>,
}

fn order_code(o: Order) -> i64 {
    match o {
        Order::C => MPI_ORDER_C as i64,
        Order::Fortran => MPI_ORDER_FORTRAN as i64,
    }
}

/// The envelope and contents of datatype `dt`, `None` for a predefined (named) one.
fn decode(dt: Handle) -> R<Option<Decoded>> {
    if predefined(dt).is_some() {
        return Ok(None);
    }
    if let Some((combiner, ints)) = crate::fortran::decode(dt) {
        return Ok(Some(Decoded {
            combiner,
            ints,
            addrs: vec![],
            large: vec![],
            olds: vec![],
        }));
    }
    map_of(dt)?;
    let node = records().get(&dt).cloned().ok_or_else(|| {
        err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} is an internal copy, not a datatype the program made"),
        )
    })?;
    let n = |v: &Vec<i64>| v.len() as i64;
    let (combiner, ints, addrs): (c_int, Vec<i64>, Vec<i64>) = match node.map.combiner() {
        Combiner::Named => {
            return Err(err(
                MPI_ERR_INTERN,
                format!("derived datatype {dt:#x} has no constructor"),
            ))
        }
        Combiner::Dup(_) => (MPI_COMBINER_DUP, vec![], vec![]),
        Combiner::Contiguous { count, .. } => (MPI_COMBINER_CONTIGUOUS, vec![*count], vec![]),
        Combiner::Vector {
            count,
            blocklength,
            stride,
            ..
        } => (
            MPI_COMBINER_VECTOR,
            vec![*count, *blocklength, *stride],
            vec![],
        ),
        Combiner::Hvector {
            count,
            blocklength,
            stride_bytes,
            ..
        } => (
            MPI_COMBINER_HVECTOR,
            vec![*count, *blocklength],
            vec![*stride_bytes],
        ),
        Combiner::Indexed {
            blocklengths,
            displacements,
            ..
        } => {
            let mut v = vec![n(blocklengths)];
            v.extend(blocklengths);
            v.extend(displacements);
            (MPI_COMBINER_INDEXED, v, vec![])
        }
        Combiner::Hindexed {
            blocklengths,
            displacements_bytes,
            ..
        } => {
            let mut v = vec![n(blocklengths)];
            v.extend(blocklengths);
            (MPI_COMBINER_HINDEXED, v, displacements_bytes.clone())
        }
        Combiner::IndexedBlock {
            blocklength,
            displacements,
            ..
        } => {
            let mut v = vec![n(displacements), *blocklength];
            v.extend(displacements);
            (MPI_COMBINER_INDEXED_BLOCK, v, vec![])
        }
        Combiner::HindexedBlock {
            blocklength,
            displacements_bytes,
            ..
        } => (
            MPI_COMBINER_HINDEXED_BLOCK,
            vec![n(displacements_bytes), *blocklength],
            displacements_bytes.clone(),
        ),
        Combiner::Struct {
            blocklengths,
            displacements_bytes,
            ..
        } => {
            let mut v = vec![n(blocklengths)];
            v.extend(blocklengths);
            (MPI_COMBINER_STRUCT, v, displacements_bytes.clone())
        }
        Combiner::Subarray {
            sizes,
            subsizes,
            starts,
            order,
            ..
        } => {
            let mut v = vec![n(sizes)];
            v.extend(sizes);
            v.extend(subsizes);
            v.extend(starts);
            v.push(order_code(*order));
            (MPI_COMBINER_SUBARRAY, v, vec![])
        }
        Combiner::Darray {
            size,
            rank,
            dims,
            order,
            ..
        } => {
            let mut v = vec![*size, *rank, dims.len() as i64];
            v.extend(dims.iter().map(|d| d.gsize));
            v.extend(dims.iter().map(|d| match d.distrib {
                Distribution::Block => MPI_DISTRIBUTE_BLOCK as i64,
                Distribution::Cyclic => MPI_DISTRIBUTE_CYCLIC as i64,
                Distribution::None => MPI_DISTRIBUTE_NONE as i64,
            }));
            v.extend(
                dims.iter()
                    .map(|d| d.darg.unwrap_or(MPI_DISTRIBUTE_DFLT_DARG as i64)),
            );
            v.extend(dims.iter().map(|d| d.psize));
            v.push(order_code(*order));
            (MPI_COMBINER_DARRAY, v, vec![])
        }
        Combiner::Resized { lb, extent, .. } => (MPI_COMBINER_RESIZED, vec![], vec![*lb, *extent]),
    };
    let (ints, addrs, large) = match node.counts {
        Counts::Int => (ints, addrs, vec![]),
        Counts::Large => as_large(combiner, ints, addrs),
    };
    Ok(Some(Decoded {
        combiner,
        ints,
        addrs,
        large,
        olds: node.olds.clone(),
    }))
}

/// The arguments of a large-count (`_c`) constructor (MPI-4.1 §5.1.13, the large-count
/// column of Table 5.1) from those the `int` form would report (`ints`, `addrs`): every
/// argument the `_c` form takes as MPI_Count moves to the large counts, in the order the
/// `int` form lists it (addresses after integers); what stays `int` (subarray's `ndims` and
/// `order`, darray's all but the global sizes) stays.
fn as_large(combiner: c_int, ints: Vec<i64>, addrs: Vec<i64>) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    match combiner {
        MPI_COMBINER_SUBARRAY => {
            // ints: ndims, sizes, subsizes, starts, order.
            let n = ints.len() - 2;
            (
                vec![ints[0], ints[ints.len() - 1]],
                vec![],
                ints[1..1 + n].to_vec(),
            )
        }
        MPI_COMBINER_DARRAY => {
            // ints: size, rank, ndims, gsizes, distribs, dargs, psizes, order.
            let n = ints[2] as usize;
            let mut rest = ints[..3].to_vec();
            rest.extend(&ints[3 + n..]);
            (rest, vec![], ints[3..3 + n].to_vec())
        }
        MPI_COMBINER_DUP => (ints, addrs, vec![]),
        _ => {
            let mut large = ints;
            large.extend(addrs);
            (vec![], vec![], large)
        }
    }
}

/// The datatype handle to return for old type `o`: itself when predefined, else a new
/// derived handle equivalent to it, recorded so that it can be decoded in turn.
fn materialize(o: &Old) -> R<Handle> {
    match o {
        Old::Named(h) => Ok(*h),
        Old::Derived(node) => {
            let s = state("MPI_Type_get_contents")?;
            let idx = s.types.insert(Derived {
                map: Rc::new(node.map.clone()),
                committed: node.committed,
                name: String::new(),
            });
            let h = make_handle(K_TYPE, idx);
            records().insert(h, Arc::clone(node));
            Ok(h)
        }
    }
}

/// The number of entries of each array: (integers, addresses, large counts, datatypes,
/// combiner).
fn envelope(dt: Handle) -> R<(i64, i64, i64, i64, c_int)> {
    Ok(match decode(dt)? {
        None => (0, 0, 0, 0, MPI_COMBINER_NAMED),
        Some(d) => (
            d.ints.len() as i64,
            d.addrs.len() as i64,
            d.large.len() as i64,
            d.olds.len() as i64,
            d.combiner,
        ),
    })
}

/// MPI_Type_get_envelope (MPI-4.1 §5.1.13).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    dt: Handle,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let (ni, na, nl, nd, c) = envelope(dt)?;
        if nl > 0 {
            return Err(err(
                MPI_ERR_TYPE,
                format!("datatype {dt:#x} holds large counts: use MPI_Type_get_envelope_c"),
            ));
        }
        put!(num_integers, ni as c_int)?;
        put!(num_addresses, na as c_int)?;
        put!(num_datatypes, nd as c_int)?;
        put!(combiner, c)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_get_envelope", r)
}

/// MPI_Type_get_envelope_c (MPI-4.1 §5.1.13, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope_c(
    dt: Handle,
    num_integers: *mut i64,
    num_addresses: *mut i64,
    num_large_counts: *mut i64,
    num_datatypes: *mut i64,
    combiner: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let (ni, na, nl, nd, c) = envelope(dt)?;
        put!(num_integers, ni)?;
        put!(num_addresses, na)?;
        put!(num_large_counts, nl)?;
        put!(num_datatypes, nd)?;
        put!(combiner, c)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_get_envelope_c", r)
}

/// Copies `vals` into the C array `out` of capacity `max`, converted by `conv`.
fn fill<T>(vals: &[i64], max: i64, out: *mut T, what: &str, conv: impl Fn(i64) -> T) -> R<()> {
    if vals.is_empty() {
        return Ok(());
    }
    if max < vals.len() as i64 {
        return Err(err(
            MPI_ERR_ARG,
            format!(
                "{what} is {max} but the datatype has {} (MPI_Type_get_envelope gives the sizes)",
                vals.len()
            ),
        ));
    }
    if out.is_null() {
        return Err(err(MPI_ERR_ARG, format!("the array for {what} is NULL")));
    }
    for (i, &v) in vals.iter().enumerate() {
        // SAFETY: the array holds `max` >= vals.len() entries (the caller's contract).
        unsafe { *out.add(i) = conv(v) };
    }
    Ok(())
}

/// The shared body of both forms: checks every capacity before creating any handle.
#[allow(clippy::too_many_arguments)]
fn contents(
    dt: Handle,
    max_integers: i64,
    max_addresses: i64,
    max_large: i64,
    max_datatypes: i64,
    ints: *mut c_int,
    addrs: *mut isize,
    large: *mut i64,
    types: *mut Handle,
) -> R<()> {
    let d = decode(dt)?.ok_or_else(|| {
        err(
            MPI_ERR_TYPE,
            format!(
                "datatype {} is predefined (MPI_COMBINER_NAMED): it has no contents",
                crate::dtype::predefined_name(dt)
            ),
        )
    })?;
    if (max_integers
        .min(max_addresses)
        .min(max_large)
        .min(max_datatypes))
        < 0
    {
        return Err(err(MPI_ERR_ARG, "an array size is negative"));
    }
    if large.is_null() && !d.large.is_empty() {
        return Err(err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} holds large counts: use MPI_Type_get_contents_c"),
        ));
    }
    if d.ints.iter().any(|&v| c_int::try_from(v).is_err()) {
        return Err(err(
            MPI_ERR_TYPE,
            format!("an integer argument of datatype {dt:#x} does not fit in an int"),
        ));
    }
    let zero: Vec<i64> = vec![0; d.olds.len()];
    fill(&zero, max_datatypes, types, "max_datatypes", |_| 0usize)?;
    fill(&d.ints, max_integers, ints, "max_integers", |v| v as c_int)?;
    fill(&d.addrs, max_addresses, addrs, "max_addresses", |v| {
        v as isize
    })?;
    if !large.is_null() {
        fill(&d.large, max_large, large, "max_large_counts", |v| v)?;
    }
    for (i, o) in d.olds.iter().enumerate() {
        let h = materialize(o)?;
        // SAFETY: checked above: the array holds at least `d.olds.len()` entries.
        unsafe { *types.add(i) = h };
    }
    Ok(())
}

/// MPI_Type_get_contents (MPI-4.1 §5.1.13): derived old types come back as new handles
/// the caller frees, predefined ones as themselves.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    dt: Handle,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut isize,
    array_of_datatypes: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = contents(
        dt,
        max_integers as i64,
        max_addresses as i64,
        0,
        max_datatypes as i64,
        array_of_integers,
        array_of_addresses,
        std::ptr::null_mut(),
        array_of_datatypes,
    );
    finish(MPI_COMM_WORLD, "MPI_Type_get_contents", r)
}

/// MPI_Type_get_contents_c (MPI-4.1 §5.1.13, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    dt: Handle,
    max_integers: i64,
    max_addresses: i64,
    max_large_counts: i64,
    max_datatypes: i64,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut isize,
    array_of_large_counts: *mut i64,
    array_of_datatypes: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // A NULL large-count array is fine when the type has none (the usual case).
    let mut dummy = 0i64;
    let large = if array_of_large_counts.is_null() {
        &mut dummy as *mut i64
    } else {
        array_of_large_counts
    };
    let r = contents(
        dt,
        max_integers,
        max_addresses,
        max_large_counts,
        max_datatypes,
        array_of_integers,
        array_of_addresses,
        large,
        array_of_datatypes,
    );
    finish(MPI_COMM_WORLD, "MPI_Type_get_contents_c", r)
}

/// The type signature of one item of `dt` as runs of predefined datatypes (handle, copies),
/// in order, adjacent runs of one type merged (for MPI_Pack_external, which converts each
/// predefined element). Signatures of more than `limit` runs are refused.
pub(crate) fn signature(dt: Handle, limit: usize) -> R<Vec<(Handle, u64)>> {
    let old = old_of(dt)?;
    let mut out = Vec::new();
    push_sig(&old, 1, &mut out, limit)?;
    Ok(out)
}

fn push_run(out: &mut Vec<(Handle, u64)>, h: Handle, n: u64) {
    if n == 0 {
        return;
    }
    match out.last_mut() {
        Some((last, c)) if *last == h => *c += n,
        _ => out.push((h, n)),
    }
}

/// Appends `times` copies of the signature of `o` to `out`.
fn push_sig(o: &Old, times: u64, out: &mut Vec<(Handle, u64)>, limit: usize) -> R<()> {
    if times == 0 {
        return Ok(());
    }
    let node = match o {
        Old::Named(h) => {
            push_run(out, *h, times);
            return Ok(());
        }
        Old::Derived(n) => n,
    };
    // One item's signature, then repeated.
    let mut one = Vec::new();
    let first = node.olds.first();
    let rep = |o: &Old, k: i64, one: &mut Vec<(Handle, u64)>| -> R<()> {
        push_sig(o, k.max(0) as u64, one, limit)
    };
    let single = |v: &Vec<i64>| v.iter().map(|&x| x.max(0)).sum::<i64>();
    match node.map.combiner() {
        Combiner::Named => {}
        Combiner::Dup(_) | Combiner::Resized { .. } => rep(first.expect("one old"), 1, &mut one)?,
        Combiner::Contiguous { count, .. } => rep(first.expect("one old"), *count, &mut one)?,
        Combiner::Vector {
            count, blocklength, ..
        }
        | Combiner::Hvector {
            count, blocklength, ..
        } => rep(first.expect("one old"), count * blocklength, &mut one)?,
        Combiner::Indexed { blocklengths, .. } | Combiner::Hindexed { blocklengths, .. } => {
            rep(first.expect("one old"), single(blocklengths), &mut one)?
        }
        Combiner::IndexedBlock {
            blocklength,
            displacements,
            ..
        } => rep(
            first.expect("one old"),
            blocklength * displacements.len() as i64,
            &mut one,
        )?,
        Combiner::HindexedBlock {
            blocklength,
            displacements_bytes,
            ..
        } => rep(
            first.expect("one old"),
            blocklength * displacements_bytes.len() as i64,
            &mut one,
        )?,
        Combiner::Struct { blocklengths, .. } => {
            for (o, &b) in node.olds.iter().zip(blocklengths) {
                rep(o, b, &mut one)?;
            }
        }
        Combiner::Subarray { subsizes, .. } => rep(
            first.expect("one old"),
            subsizes.iter().product::<i64>(),
            &mut one,
        )?,
        Combiner::Darray { old, .. } => {
            let per = old.size_bytes();
            let k = node.map.size_bytes().checked_div(per).unwrap_or(0) as i64;
            rep(first.expect("one old"), k, &mut one)?
        }
    }
    if one.len() == 1 {
        let (h, c) = one[0];
        push_run(out, h, c * times);
        return Ok(());
    }
    if (one.len() as u64).saturating_mul(times) > limit as u64 {
        return Err(err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("the type signature has more than {limit} runs of predefined types"),
        ));
    }
    for _ in 0..times {
        for &(h, c) in &one {
            push_run(out, h, c);
        }
    }
    Ok(())
}

/// Datatype `dt` rebuilt with every predefined type replaced by `leaf(handle)`, by the same
/// constructor calls (MPI-4.1 §14.5: a view's types in a file data representation whose
/// element sizes differ, "external32" or a registered one). Bounds set by
/// MPI_Type_create_resized and byte displacements stay as given; element strides and
/// displacements scale with the new extents.
pub(crate) fn rebuild(dt: Handle, leaf: &dyn Fn(Handle) -> R<TypeMap>) -> R<TypeMap> {
    rebuild_old(&old_of(dt)?, leaf)
}

fn rebuild_old(o: &Old, leaf: &dyn Fn(Handle) -> R<TypeMap>) -> R<TypeMap> {
    let node = match o {
        Old::Named(h) => return leaf(*h),
        Old::Derived(n) => n,
    };
    let olds = node
        .olds
        .iter()
        .map(|o| rebuild_old(o, leaf))
        .collect::<R<Vec<_>>>()?;
    let one = || {
        olds.first()
            .ok_or_else(|| err(MPI_ERR_INTERN, "a constructor without its old type"))
    };
    let t = match node.map.combiner() {
        Combiner::Named => return Err(err(MPI_ERR_INTERN, "a derived type without constructor")),
        Combiner::Dup(_) => one()?.dup(),
        Combiner::Contiguous { count, .. } => TypeMap::contiguous(*count, one()?)?,
        Combiner::Vector {
            count,
            blocklength,
            stride,
            ..
        } => TypeMap::vector(*count, *blocklength, *stride, one()?)?,
        Combiner::Hvector {
            count,
            blocklength,
            stride_bytes,
            ..
        } => TypeMap::hvector(*count, *blocklength, *stride_bytes, one()?)?,
        Combiner::Indexed {
            blocklengths,
            displacements,
            ..
        } => TypeMap::indexed(blocklengths, displacements, one()?)?,
        Combiner::Hindexed {
            blocklengths,
            displacements_bytes,
            ..
        } => TypeMap::hindexed(blocklengths, displacements_bytes, one()?)?,
        Combiner::IndexedBlock {
            blocklength,
            displacements,
            ..
        } => TypeMap::indexed_block(*blocklength, displacements, one()?)?,
        Combiner::HindexedBlock {
            blocklength,
            displacements_bytes,
            ..
        } => TypeMap::hindexed_block(*blocklength, displacements_bytes, one()?)?,
        Combiner::Struct {
            blocklengths,
            displacements_bytes,
            ..
        } => TypeMap::create_struct(blocklengths, displacements_bytes, &olds)?,
        Combiner::Subarray {
            sizes,
            subsizes,
            starts,
            order,
            ..
        } => TypeMap::subarray(sizes, subsizes, starts, *order, one()?)?,
        Combiner::Darray {
            size,
            rank,
            dims,
            order,
            ..
        } => TypeMap::darray(*size, *rank, dims, *order, one()?)?,
        Combiner::Resized { lb, extent, .. } => TypeMap::resized(one()?, *lb, *extent)?,
    };
    Ok(t)
}
