//! The part of hwloc 2.x weft uses, loaded at run time with `dlopen` (`WEFT_HWLOC_LIB`,
//! Debian's `libhwloc.so.15`), so that nothing links libhwloc: a program built with
//! `mpicc -static` still links (Debian's `libhwloc.a` needs `libudev`, which has no static
//! archive), and a machine without hwloc runs weft with node-level hierarchies only.
//!
//! Only functions are called, except for one field read: an object's `cpuset`, at its offset
//! in hwloc 2.x's `struct hwloc_obj` ([`ObjHead`], whose layout hwloc keeps within 2.x; a
//! test checks it, and the type numbers, against the installed `hwloc.h`). The library's API
//! major must be 2.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::Mutex;

/// `hwloc_obj_type_t` values of hwloc 2.x (`HWLOC_OBJ_*`).
pub(crate) type ObjType = c_int;
pub(crate) const OBJ_PACKAGE: ObjType = 1;
pub(crate) const OBJ_PU: ObjType = 3;
pub(crate) const OBJ_L3CACHE: ObjType = 6;
pub(crate) const OBJ_NUMANODE: ObjType = 13;

/// `HWLOC_TYPE_DEPTH_UNKNOWN`, `HWLOC_TYPE_DEPTH_MULTIPLE`.
const DEPTH_UNKNOWN: c_int = -1;
const DEPTH_MULTIPLE: c_int = -2;

type Topo = *mut c_void;
type Bitmap = *const c_void;

/// The head of hwloc 2.x's `struct hwloc_obj`, up to the field weft reads (`cpuset`); the
/// pointers weft never follows are untyped.
#[repr(C)]
pub(crate) struct ObjHead {
    pub ty: ObjType,
    pub subtype: *mut c_char,
    pub os_index: c_uint,
    pub name: *mut c_char,
    pub total_memory: u64,
    pub attr: *mut c_void,
    pub depth: c_int,
    pub logical_index: c_uint,
    pub next_cousin: *mut c_void,
    pub prev_cousin: *mut c_void,
    pub parent: *mut c_void,
    pub sibling_rank: c_uint,
    pub next_sibling: *mut c_void,
    pub prev_sibling: *mut c_void,
    pub arity: c_uint,
    pub children: *mut c_void,
    pub first_child: *mut c_void,
    pub last_child: *mut c_void,
    pub symmetric_subtree: c_int,
    pub memory_arity: c_uint,
    pub memory_first_child: *mut c_void,
    pub io_arity: c_uint,
    pub io_first_child: *mut c_void,
    pub misc_arity: c_uint,
    pub misc_first_child: *mut c_void,
    pub cpuset: Bitmap,
}

macro_rules! hwloc_api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The loaded library: one function pointer per hwloc call weft makes.
        struct Api {
            _lib: libloading::Library,
            $($name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Api {
            fn resolve(lib: libloading::Library) -> Result<Api, String> {
                $(
                    // SAFETY: the symbol is a function of this signature in hwloc 2.x's
                    // libhwloc (hwloc.h, hwloc/bitmap.h).
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                        .map_err(|e| format!("{}: {e}", stringify!($name)))?
                    };
                )*
                Ok(Api { _lib: lib, $($name,)* })
            }
        }
    };
}

hwloc_api! {
    hwloc_get_api_version: fn() -> c_uint;
    hwloc_topology_init: fn(*mut Topo) -> c_int;
    hwloc_topology_set_synthetic: fn(Topo, *const c_char) -> c_int;
    hwloc_topology_set_xml: fn(Topo, *const c_char) -> c_int;
    hwloc_topology_load: fn(Topo) -> c_int;
    hwloc_topology_destroy: fn(Topo);
    hwloc_get_type_depth: fn(Topo, ObjType) -> c_int;
    hwloc_get_nbobjs_by_depth: fn(Topo, c_int) -> c_uint;
    hwloc_get_obj_by_depth: fn(Topo, c_int, c_uint) -> *const ObjHead;
    hwloc_bitmap_isset: fn(Bitmap, c_uint) -> c_int;
    hwloc_bitmap_first: fn(Bitmap) -> c_int;
}

/// The library `library`, loaded once per process (and kept), or why it cannot be.
fn api(library: &str) -> Result<&'static Api, String> {
    static LOADED: Mutex<Option<HashMap<String, Result<&'static Api, String>>>> = Mutex::new(None);
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    loaded
        .get_or_insert_with(HashMap::new)
        .entry(library.to_string())
        .or_insert_with(|| load(library).map(|a| &*Box::leak(Box::new(a))))
        .clone()
}

fn load(library: &str) -> Result<Api, String> {
    if !dynamically_linked() {
        return Err(format!(
            "this program is linked statically (mpicc -static), so it cannot load {library} \
             at run time (a static executable's dlopen would bring in a second C library)"
        ));
    }
    // SAFETY: loading libhwloc runs its constructors, which is what linking it would do.
    let lib = unsafe { libloading::Library::new(library) }
        .map_err(|e| format!("{library} cannot be loaded: {e}"))?;
    let api = Api::resolve(lib).map_err(|e| format!("{library}: {e}"))?;
    // SAFETY: a function of no arguments returning the library's HWLOC_API_VERSION.
    let version = unsafe { (api.hwloc_get_api_version)() };
    if version >> 16 != 2 {
        return Err(format!(
            "{library} is hwloc API {}.{} (0x{version:x}); weft reads hwloc 2.x",
            version >> 16,
            (version >> 8) & 0xff
        ));
    }
    Ok(api)
}

/// Where a topology comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source<'a> {
    /// This machine's.
    Machine,
    /// An hwloc synthetic description.
    Synthetic(&'a str),
    /// The path of an hwloc XML file.
    Xml(&'a str),
}

/// A loaded topology (`hwloc_topology_t`), destroyed on drop.
pub(crate) struct Topology {
    api: &'static Api,
    topo: Topo,
}

/// Why a topology could not be had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LoadError {
    /// The library cannot be loaded: why.
    NoLibrary(String),
    /// hwloc refused the source or failed loading it: why.
    Refused(String),
}

impl Topology {
    /// Loads the topology of `src` with hwloc from `library`.
    pub(crate) fn load(library: &str, src: Source<'_>) -> Result<Topology, LoadError> {
        let api = api(library).map_err(LoadError::NoLibrary)?;
        let mut topo: Topo = std::ptr::null_mut();
        // SAFETY: a writable handle slot.
        if unsafe { (api.hwloc_topology_init)(&mut topo) } != 0 || topo.is_null() {
            return Err(LoadError::Refused(format!(
                "hwloc_topology_init failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        let t = Topology { api, topo };
        let set = |f: unsafe extern "C" fn(Topo, *const c_char) -> c_int, arg: &str| {
            let c = CString::new(arg).map_err(|_| "it contains a NUL byte".to_string())?;
            // SAFETY: an initialized, not yet loaded topology and a NUL-terminated string
            // that outlives the call (hwloc copies what it keeps).
            if unsafe { f(t.topo, c.as_ptr()) } == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error().to_string())
            }
        };
        match src {
            Source::Machine => {}
            Source::Synthetic(d) => set(api.hwloc_topology_set_synthetic, d)
                .map_err(|e| LoadError::Refused(format!("hwloc refused it: {e}")))?,
            Source::Xml(path) => {
                // hwloc's own message for a missing file is only errno: say what it was.
                std::fs::File::open(path)
                    .map_err(|e| LoadError::Refused(format!("could not read it: {e}")))?;
                set(api.hwloc_topology_set_xml, path)
                    .map_err(|e| LoadError::Refused(format!("hwloc refused it: {e}")))?;
            }
        }
        // SAFETY: an initialized topology, configured above.
        if unsafe { (api.hwloc_topology_load)(t.topo) } != 0 {
            return Err(LoadError::Refused(format!(
                "hwloc could not load it: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(t)
    }

    /// The objects of type `ty` in logical order (none where the type is absent or at several
    /// depths), as `hwloc_get_nbobjs_by_type` / `hwloc_get_obj_by_type` find them.
    pub(crate) fn objects(&self, ty: ObjType) -> Vec<Obj<'_>> {
        // SAFETY: a loaded topology; hwloc_get_type_depth takes any type value.
        let depth = unsafe { (self.api.hwloc_get_type_depth)(self.topo, ty) };
        if depth == DEPTH_UNKNOWN || depth == DEPTH_MULTIPLE {
            return Vec::new();
        }
        // SAFETY: a loaded topology and a depth hwloc gave for it.
        let n = unsafe { (self.api.hwloc_get_nbobjs_by_depth)(self.topo, depth) };
        (0..n)
            .filter_map(|i| {
                // SAFETY: as above, with an index below the count at that depth.
                let p = unsafe { (self.api.hwloc_get_obj_by_depth)(self.topo, depth, i) };
                // SAFETY: a non-NULL object of the loaded topology, which lives as long as
                // the topology (the borrow of `self`).
                unsafe { p.as_ref() }.map(|head| Obj { topo: self, head })
            })
            .collect()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // SAFETY: a topology hwloc_topology_init made, destroyed once; no `Obj` borrows it.
        unsafe { (self.api.hwloc_topology_destroy)(self.topo) };
    }
}

/// One object of a loaded topology.
#[derive(Clone, Copy)]
pub(crate) struct Obj<'t> {
    topo: &'t Topology,
    head: &'t ObjHead,
}

impl Obj<'_> {
    /// Whether the object's CPU set holds the CPU of OS index `cpu`.
    pub(crate) fn has_cpu(&self, cpu: usize) -> bool {
        let Ok(cpu) = c_uint::try_from(cpu) else {
            return false;
        };
        // SAFETY: the object's cpuset, a bitmap of the loaded topology (NULL never: every
        // object of the normal and memory trees has one; hwloc_bitmap_isset is not reached
        // for NULL).
        !self.head.cpuset.is_null()
            && unsafe { (self.topo.api.hwloc_bitmap_isset)(self.head.cpuset, cpu) } != 0
    }

    /// The OS index of the object's first CPU, if it has any.
    pub(crate) fn first_cpu(&self) -> Option<usize> {
        if self.head.cpuset.is_null() {
            return None;
        }
        // SAFETY: the object's cpuset, a bitmap of the loaded topology.
        let first = unsafe { (self.topo.api.hwloc_bitmap_first)(self.head.cpuset) };
        usize::try_from(first).ok()
    }
}

#[cfg(target_pointer_width = "64")]
type Phdr = libc::Elf64_Phdr;
#[cfg(target_pointer_width = "32")]
type Phdr = libc::Elf32_Phdr;

/// Whether the running program has a dynamic loader (its program headers name one,
/// `PT_INTERP`): a statically linked executable (`-static` or `-static-pie`) has none, and
/// loading a shared library that needs the C library into it crashes.
fn dynamically_linked() -> bool {
    // SAFETY: getauxval only reads the auxiliary vector the kernel gave the process.
    let (phdr, phnum) = unsafe {
        (
            libc::getauxval(libc::AT_PHDR),
            libc::getauxval(libc::AT_PHNUM),
        )
    };
    if phdr == 0 {
        // No program headers to look at: let the loader decide.
        return true;
    }
    // SAFETY: AT_PHDR is the address of the main program's program headers, mapped for the
    // life of the process, AT_PHNUM entries of the native ELF header type.
    let headers = unsafe { std::slice::from_raw_parts(phdr as *const Phdr, phnum as usize) };
    headers.iter().any(|h| h.p_type == libc::PT_INTERP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_test_binary_has_a_dynamic_loader() {
        assert!(dynamically_linked());
    }

    /// The offsets and type numbers above are the installed hwloc.h's.
    #[test]
    fn layout_matches_hwloc_h() {
        if !std::path::Path::new("/usr/include/hwloc.h").exists() {
            println!("skipped: /usr/include/hwloc.h is absent (install libhwloc-dev)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("weft-hwloc-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("layout.c");
        let exe = dir.join("layout");
        std::fs::write(
            &src,
            "#include <hwloc.h>\n#include <stddef.h>\n#include <stdio.h>\n\
             int main(void) {\n\
             printf(\"api %u\\n\", (unsigned)(HWLOC_API_VERSION >> 16));\n\
             printf(\"os_index %zu\\n\", offsetof(struct hwloc_obj, os_index));\n\
             printf(\"depth %zu\\n\", offsetof(struct hwloc_obj, depth));\n\
             printf(\"symmetric_subtree %zu\\n\", offsetof(struct hwloc_obj, symmetric_subtree));\n\
             printf(\"cpuset %zu\\n\", offsetof(struct hwloc_obj, cpuset));\n\
             printf(\"package %d\\n\", (int)HWLOC_OBJ_PACKAGE);\n\
             printf(\"pu %d\\n\", (int)HWLOC_OBJ_PU);\n\
             printf(\"l3 %d\\n\", (int)HWLOC_OBJ_L3CACHE);\n\
             printf(\"numa %d\\n\", (int)HWLOC_OBJ_NUMANODE);\n\
             printf(\"depth_unknown %d\\n\", (int)HWLOC_TYPE_DEPTH_UNKNOWN);\n\
             printf(\"depth_multiple %d\\n\", (int)HWLOC_TYPE_DEPTH_MULTIPLE);\n\
             return 0;\n}\n",
        )
        .unwrap();
        let built = Command::new("gcc").arg(&src).arg("-o").arg(&exe).output();
        let built = built.expect("gcc runs");
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let out = Command::new(&exe).output().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let c: std::collections::HashMap<&str, i64> = text
            .lines()
            .map(|l| {
                let (k, v) = l.split_once(' ').unwrap();
                (k, v.parse().unwrap())
            })
            .collect();
        use std::mem::offset_of;
        let rust: [(&str, i64); 11] = [
            ("api", 2),
            ("os_index", offset_of!(ObjHead, os_index) as i64),
            ("depth", offset_of!(ObjHead, depth) as i64),
            (
                "symmetric_subtree",
                offset_of!(ObjHead, symmetric_subtree) as i64,
            ),
            ("cpuset", offset_of!(ObjHead, cpuset) as i64),
            ("package", OBJ_PACKAGE.into()),
            ("pu", OBJ_PU.into()),
            ("l3", OBJ_L3CACHE.into()),
            ("numa", OBJ_NUMANODE.into()),
            ("depth_unknown", DEPTH_UNKNOWN.into()),
            ("depth_multiple", DEPTH_MULTIPLE.into()),
        ];
        for (k, v) in rust {
            assert_eq!(c[k], v, "{k}: hwloc.h says {}, weft has {v}", c[k]);
        }
    }

    #[test]
    fn a_missing_library_is_an_error_that_names_it() {
        match load("libhwloc-not-there.so.15") {
            Err(e) => assert!(e.contains("libhwloc-not-there.so.15"), "{e}"),
            Ok(_) => panic!("loaded a library that does not exist"),
        }
    }
}
