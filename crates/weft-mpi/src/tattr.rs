//! Datatype attributes (MPI-4.1 §7.7.4): MPI_Type_create_keyval/free_keyval and
//! MPI_Type_set_attr/get_attr/delete_attr. Attributes are copied by their keyval's copy
//! callback on MPI_Type_dup and deleted by the delete callback on MPI_Type_free and
//! MPI_Type_delete_attr. Predefined datatypes take attributes too.
//! Type keyvals are numbered apart from communicator keyvals, so one used in place of the
//! other is refused with MPI_ERR_KEYVAL. Depends on dtype.rs (handle checks) only.

use crate::consts::*;
use crate::dtype::{map_of, put};
use crate::error::{err, finish, R};
use crate::state::Keyval;
use std::collections::BTreeMap;
use std::os::raw::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

/// MPI_Type_copy_attr_function.
type CopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// MPI_Type_delete_attr_function.
type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// MPI_KEYVAL_INVALID (mpi.h of the standard ABI).
const MPI_KEYVAL_INVALID: c_int = 0;

/// Type keyvals are `TYPE_KEYVAL_BASE + index`; communicator keyvals start at 4096 and stay
/// far below.
const TYPE_KEYVAL_BASE: c_int = 1 << 24;

#[derive(Default)]
struct Tables {
    /// Keyvals by index; `freed` ones still serve the attributes set before the free.
    keyvals: Vec<(Keyval, bool)>,
    /// Attributes per datatype handle: keyval and value, in the order set.
    attrs: BTreeMap<Handle, Vec<(c_int, usize)>>,
}

/// MPI calls are serialized (MPI_THREAD_SERIALIZED at most); callbacks run with the lock
/// released, so a callback may call the attribute functions.
static TABLES: Mutex<Tables> = Mutex::new(Tables {
    keyvals: Vec::new(),
    attrs: BTreeMap::new(),
});

fn tables() -> MutexGuard<'static, Tables> {
    TABLES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The keyval `k`, if it is a type keyval; `live` refuses freed ones.
fn keyval(k: c_int, live: bool) -> R<Keyval> {
    let t = tables();
    let entry = k
        .checked_sub(TYPE_KEYVAL_BASE)
        .filter(|i| *i >= 0)
        .and_then(|i| t.keyvals.get(i as usize));
    match entry {
        Some(&(kv, freed)) if !(live && freed) => Ok(kv),
        Some(_) => Err(err(MPI_ERR_KEYVAL, format!("type keyval {k} was freed"))),
        None => Err(err(
            MPI_ERR_KEYVAL,
            format!("keyval {k} is not a datatype keyval (MPI_Type_create_keyval)"),
        )),
    }
}

/// Runs the delete callback of attribute `k` with value `v` on `dt`.
fn run_delete(dt: Handle, k: c_int, v: usize) -> R<()> {
    let kv = keyval(k, false)?;
    if kv.delete != 0 {
        // SAFETY: registered by the program as an MPI_Type_delete_attr_function.
        let f: DeleteFn = unsafe { std::mem::transmute::<usize, DeleteFn>(kv.delete) };
        // SAFETY: the program's callback, called as the standard specifies.
        let rc = unsafe { f(dt, k, v as *mut c_void, kv.extra as *mut c_void) };
        if rc != MPI_SUCCESS {
            return Err(err(
                rc,
                format!("delete callback of type keyval {k} returned {rc}"),
            ));
        }
    }
    Ok(())
}

/// Deletes every attribute of `dt` (MPI_Type_free), in the order they were set. The
/// first failing callback's error is returned after all were run.
pub(crate) fn delete_all(dt: Handle) -> R<()> {
    let attrs = tables().attrs.remove(&dt).unwrap_or_default();
    let mut first = Ok(());
    for (k, v) in attrs {
        if let Err(e) = run_delete(dt, k, v) {
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

/// Copies the attributes of `old` to its duplicate `new` (MPI_Type_dup) through each
/// keyval's copy callback.
pub(crate) fn copy_all(old: Handle, new: Handle) -> R<()> {
    let attrs = tables().attrs.get(&old).cloned().unwrap_or_default();
    let mut copied = Vec::new();
    for (k, v) in attrs {
        let kv = keyval(k, false)?;
        match kv.copy {
            0 => {}
            1 => copied.push((k, v)),
            f => {
                // SAFETY: registered by the program as an MPI_Type_copy_attr_function.
                let f: CopyFn = unsafe { std::mem::transmute::<usize, CopyFn>(f) };
                let (mut out, mut flag) = (0usize, 0);
                // SAFETY: the program's callback, called as the standard specifies.
                let rc = unsafe {
                    f(
                        old,
                        k,
                        kv.extra as *mut c_void,
                        v as *mut c_void,
                        &mut out as *mut usize as *mut c_void,
                        &mut flag,
                    )
                };
                if rc != MPI_SUCCESS {
                    return Err(err(
                        rc,
                        format!("copy callback of type keyval {k} returned {rc}"),
                    ));
                }
                if flag != 0 {
                    copied.push((k, out));
                }
            }
        }
    }
    if !copied.is_empty() {
        tables().attrs.insert(new, copied);
    }
    Ok(())
}

/// MPI_Type_create_keyval (MPI-4.1 §7.7.4). The copy function may be MPI_TYPE_NULL_COPY_FN
/// (0) or MPI_TYPE_DUP_FN (1), the delete function MPI_TYPE_NULL_DELETE_FN (0).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    copy_fn: usize,
    delete_fn: usize,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if keyval.is_null() {
            return Err(err(MPI_ERR_ARG, "type_keyval is NULL"));
        }
        let mut t = tables();
        let i = t.keyvals.len() as c_int;
        t.keyvals.push((
            Keyval {
                copy: copy_fn,
                delete: delete_fn,
                extra: extra_state as usize,
            },
            false,
        ));
        put!(keyval, TYPE_KEYVAL_BASE + i)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_create_keyval", r)
}

/// MPI_Type_free_keyval (MPI-4.1 §7.7.4): sets the keyval to MPI_KEYVAL_INVALID;
/// attributes already set keep working until deleted, new ones are refused.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free_keyval(keyval_p: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if keyval_p.is_null() {
            return Err(err(MPI_ERR_ARG, "type_keyval is NULL"));
        }
        // SAFETY: non-null.
        let k = unsafe { *keyval_p };
        // Freeing a freed keyval again is accepted (MPICH's keyval_double_free_type frees
        // copies of one keyval from delete callbacks, as the communicator keyvals allow).
        keyval(k, false)?;
        tables().keyvals[(k - TYPE_KEYVAL_BASE) as usize].1 = true;
        put!(keyval_p, MPI_KEYVAL_INVALID)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_free_keyval", r)
}

/// MPI_Type_set_attr (MPI-4.1 §7.7.4): replacing a value runs the delete callback on the
/// old one first.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_attr(dt: Handle, k: c_int, value: *mut c_void) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        map_of(dt)?;
        keyval(k, true)?;
        let old = tables()
            .attrs
            .get(&dt)
            .and_then(|a| a.iter().find(|(x, _)| *x == k).map(|&(_, v)| v));
        if let Some(v) = old {
            run_delete(dt, k, v)?;
        }
        let mut t = tables();
        let list = t.attrs.entry(dt).or_default();
        match list.iter_mut().find(|(x, _)| *x == k) {
            Some(e) => e.1 = value as usize,
            None => list.push((k, value as usize)),
        }
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_set_attr", r)
}

/// MPI_Type_get_attr (MPI-4.1 §7.7.4): `value` receives the stored pointer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(
    dt: Handle,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        map_of(dt)?;
        keyval(k, false)?;
        let v = tables()
            .attrs
            .get(&dt)
            .and_then(|a| a.iter().find(|(x, _)| *x == k).map(|&(_, v)| v));
        if let Some(v) = v {
            put!(value as *mut usize, v)?;
        }
        put!(flag, v.is_some() as c_int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_get_attr", r)
}

/// MPI_Type_delete_attr (MPI-4.1 §7.7.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_delete_attr(dt: Handle, k: c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        map_of(dt)?;
        keyval(k, false)?;
        let v = tables()
            .attrs
            .get(&dt)
            .and_then(|a| a.iter().find(|(x, _)| *x == k).map(|&(_, v)| v));
        let Some(v) = v else {
            return Err(err(
                MPI_ERR_KEYVAL,
                format!("type keyval {k} is not set on datatype {dt:#x}"),
            ));
        };
        run_delete(dt, k, v)?;
        if let Some(list) = tables().attrs.get_mut(&dt) {
            list.retain(|(x, _)| *x != k);
        }
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Type_delete_attr", r)
}
