//! Writes libshmem's C entry points from tables, at build time, into `$OUT_DIR`:
//!
//! - `exports.rs`: one `#[no_mangle] extern "C"` function per OpenSHMEM routine and its
//!   profiling twin `pshmem_*` (OpenSHMEM 1.5 §10), each a call into the crate's helpers:
//!   every per-type routine (put, get, atomics, wait/test, collectives, reductions, for every
//!   type the specification lists) and the untyped ones (their bodies are in `src/api.rs`).
//! - `prototypes.h`: the C prototype of every function `exports.rs` defines, which the tests
//!   compile against `include/shmem.h` and `include/pshmem.h`, so the headers and the library
//!   cannot drift apart (a missing or a different declaration fails the build of the test).
//!
//! Every routine is described by its C prototype; its Rust signature is derived from it (see
//! [`rust_type`]), so the two cannot disagree either.

#![allow(
    clippy::disallowed_methods,
    reason = "a build script's inputs are the variables cargo sets"
)]

use std::fmt::Write as _;
use std::path::PathBuf;

/// The untyped routines: C prototype, implemented by `crate::api::<name>` with the same
/// arguments. Names starting with `shmem_` also get a `pshmem_` twin.
const UNTYPED: &[&str] = &[
    "void shmem_init(void)",
    "int shmem_init_thread(int requested, int *provided)",
    "void shmem_query_thread(int *provided)",
    "void shmem_finalize(void)",
    "int shmem_my_pe(void)",
    "int shmem_n_pes(void)",
    "int _my_pe(void)",
    "int _num_pes(void)",
    "int my_pe(void)",
    "int num_pes(void)",
    "void start_pes(int npes)",
    "void shmem_global_exit(int status)",
    "void shmem_info_get_version(int *major, int *minor)",
    "void shmem_info_get_name(char *name)",
    "int shmem_pe_accessible(int pe)",
    "int shmem_addr_accessible(const void *addr, int pe)",
    "void *shmem_ptr(const void *dest, int pe)",
    "void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)",
    "void shmem_pcontrol(const int level, ...)",
    "void *shmem_malloc(size_t size)",
    "void *shmem_malloc_with_hints(size_t size, long hints)",
    "void *shmem_calloc(size_t count, size_t size)",
    "void *shmem_align(size_t alignment, size_t size)",
    "void shmem_free(void *ptr)",
    "void *shmem_realloc(void *ptr, size_t size)",
    "void *shmalloc(size_t size)",
    "void shfree(void *ptr)",
    "void *shrealloc(void *ptr, size_t size)",
    "void *shmemalign(size_t alignment, size_t size)",
    "uint64_t shmem_signal_fetch(const uint64_t *sig_addr)",
    "uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)",
    "void shmem_wait(long *ivar, long cmp_value)",
    "void shmem_wait_until(long *ivar, int cmp, long cmp_value)",
    "void shmem_quiet(void)",
    "void shmem_fence(void)",
    "void shmem_ctx_quiet(shmem_ctx_t ctx)",
    "void shmem_ctx_fence(shmem_ctx_t ctx)",
    "int shmem_ctx_create(long options, shmem_ctx_t *ctx)",
    "void shmem_ctx_destroy(shmem_ctx_t ctx)",
    "int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)",
    "int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)",
    "void shmem_barrier_all(void)",
    "void shmem_sync_all(void)",
    "void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "int shmem_team_sync(shmem_team_t team)",
    "void shmem_set_lock(long *lock)",
    "void shmem_clear_lock(long *lock)",
    "int shmem_test_lock(long *lock)",
    "int shmem_team_my_pe(shmem_team_t team)",
    "int shmem_team_n_pes(shmem_team_t team)",
    "int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)",
    "int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)",
    "int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)",
    "int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team)",
    "void shmem_team_destroy(shmem_team_t team)",
    "int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root)",
    "int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)",
    "int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)",
    "int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)",
    "int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems)",
    "void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)",
    "void shmem_clear_cache_inv(void)",
    "void shmem_set_cache_inv(void)",
    "void shmem_clear_cache_line_inv(void *dest)",
    "void shmem_set_cache_line_inv(void *dest)",
    "void shmem_udcflush(void)",
    "void shmem_udcflush_line(void *dest)",
];

/// One C type of the per-type routines: its C spelling, the TYPENAME in routine names, its
/// Rust type, size, `weft::coll::TypeKind` (an expression) and the routine families it has.
struct Ty {
    c: &'static str,
    name: &'static str,
    kind: &'static str,
    bytes: usize,
    classes: &'static str,
}

// Classes: r = RMA and collectives (Table 5 "Standard RMA Types"); w = point-to-point
// synchronisation (Table 11); a = standard AMO, x = extended AMO (fetch/set/swap), b =
// bitwise AMO (Tables 6-8); m = min/max, s = sum/prod, l = and/or/xor reductions (Table 10);
// t = deprecated sum/prod/min/max `_to_all`, o = deprecated and/or/xor `_to_all`; d = the
// deprecated 1.3 AMO names (finc, fadd, cswap, ...).
const TYPES: &[Ty] = &[
    ty("float", "float", "TypeKind::F32", 4, "rxmstd"),
    ty("double", "double", "TypeKind::F64", 8, "rxmstd"),
    ty(
        "long double",
        "longdouble",
        "TypeKind::LongDouble",
        16,
        "rmst",
    ),
    ty("char", "char", "CHAR_KIND", 1, "rms"),
    ty("signed char", "schar", "TypeKind::I8", 1, "rms"),
    ty("short", "short", "TypeKind::I16", 2, "rwmsto"),
    ty("int", "int", "TypeKind::I32", 4, "rwaxmstod"),
    ty("long", "long", "TypeKind::I64", 8, "rwaxmstod"),
    ty("long long", "longlong", "TypeKind::I64", 8, "rwaxmstod"),
    ty("unsigned char", "uchar", "TypeKind::U8", 1, "rmsl"),
    ty("unsigned short", "ushort", "TypeKind::U16", 2, "rwmsl"),
    ty("unsigned int", "uint", "TypeKind::U32", 4, "rwaxbmsl"),
    ty("unsigned long", "ulong", "TypeKind::U64", 8, "rwaxbmsl"),
    ty(
        "unsigned long long",
        "ulonglong",
        "TypeKind::U64",
        8,
        "rwaxbmsl",
    ),
    ty("int8_t", "int8", "TypeKind::I8", 1, "rmsl"),
    ty("int16_t", "int16", "TypeKind::I16", 2, "rmsl"),
    ty("int32_t", "int32", "TypeKind::I32", 4, "rwaxbmsl"),
    ty("int64_t", "int64", "TypeKind::I64", 8, "rwaxbmsl"),
    ty("uint8_t", "uint8", "TypeKind::U8", 1, "rmsl"),
    ty("uint16_t", "uint16", "TypeKind::U16", 2, "rmsl"),
    ty("uint32_t", "uint32", "TypeKind::U32", 4, "rwaxbmsl"),
    ty("uint64_t", "uint64", "TypeKind::U64", 8, "rwaxbmsl"),
    ty("size_t", "size", "TypeKind::U64", 8, "rwaxbmsl"),
    ty("ptrdiff_t", "ptrdiff", "TypeKind::I64", 8, "rwaxms"),
    ty(
        "double _Complex",
        "complexd",
        "TypeKind::ComplexF64",
        16,
        "sT",
    ),
    ty(
        "float _Complex",
        "complexf",
        "TypeKind::ComplexF32",
        8,
        "sT",
    ),
];

const fn ty(
    c: &'static str,
    name: &'static str,
    kind: &'static str,
    bytes: usize,
    classes: &'static str,
) -> Ty {
    Ty {
        c,
        name,
        kind,
        bytes,
        classes,
    }
}

impl Ty {
    fn has(&self, class: char) -> bool {
        self.classes.contains(class)
    }

    /// The Rust type of a value of this C type.
    fn rust(&self) -> String {
        rust_type(self.c)
    }

    /// The unsigned integer of the same width (the AMO word), for integer and float types.
    fn word(&self) -> &'static str {
        match self.bytes {
            4 => "u32",
            _ => "u64",
        }
    }

    fn is_float(&self) -> bool {
        matches!(self.c, "float" | "double")
    }

    /// Rust expression: the AMO word holding `v` (bits of a float, zero-extended integer).
    fn to_word(&self, v: &str) -> String {
        if self.is_float() {
            format!("{v}.to_bits() as u64")
        } else {
            format!("{v} as {} as u64", self.word())
        }
    }

    /// Rust expression: the value of this type in AMO word `v`.
    fn word_to_value(&self, v: &str) -> String {
        if self.is_float() {
            format!("{}::from_bits({v} as {})", self.rust(), self.word())
        } else {
            format!("{v} as {} as {}", self.word(), self.rust())
        }
    }
}

/// The Rust type of a C type as written in a prototype (`const long *`, `size_t`, ...).
fn rust_type(c: &str) -> String {
    let c = c.trim();
    if let Some(inner) = c.strip_suffix('*') {
        let inner = inner.trim();
        return match inner.strip_prefix("const ") {
            Some(pointee) => format!("*const {}", rust_type(pointee)),
            None => format!("*mut {}", rust_type(inner)),
        };
    }
    let c = c.strip_prefix("const ").unwrap_or(c);
    match c {
        "void" => "c_void",
        "float" => "f32",
        "double" => "f64",
        "long double" => "LongDoubleBytes",
        "char" => "c_char",
        "signed char" | "int8_t" => "i8",
        "short" | "int16_t" => "i16",
        "int" | "int32_t" => "c_int",
        "long" => "c_long",
        "long long" | "int64_t" => "i64",
        "unsigned char" | "uint8_t" => "u8",
        "unsigned short" | "uint16_t" => "u16",
        "unsigned int" | "uint32_t" => "u32",
        "unsigned long" | "unsigned long long" | "uint64_t" => "u64",
        "size_t" => "usize",
        "ptrdiff_t" => "isize",
        "shmem_ctx_t" => "ShmemCtx",
        "shmem_team_t" => "ShmemTeam",
        "shmem_team_config_t" => "TeamConfig",
        "double _Complex" => "[f64; 2]",
        "float _Complex" => "[f32; 2]",
        other => panic!("no Rust type for C type {other:?}"),
    }
    .to_string()
}

/// A parsed C prototype: return type, name, parameters (type, name).
struct Proto {
    ret: String,
    name: String,
    params: Vec<(String, String)>,
    variadic: bool,
}

fn parse(proto: &str) -> Proto {
    let open = proto.find('(').expect("prototype has a '('");
    let head = proto[..open].trim();
    let (ret, name) = split_decl(head);
    let inner = proto[open + 1..]
        .trim_end()
        .strip_suffix(')')
        .expect("ends with ')'");
    let mut params = Vec::new();
    let mut variadic = false;
    for p in inner.split(',').map(str::trim) {
        match p {
            "void" | "" => {}
            "..." => variadic = true,
            p => params.push(split_decl(p)),
        }
    }
    Proto {
        ret,
        name,
        params,
        variadic,
    }
}

/// Splits `const long *source` into (`const long *`, `source`).
fn split_decl(decl: &str) -> (String, String) {
    let at = decl
        .rfind([' ', '*'])
        .expect("a declaration has a type and a name");
    let name = decl[at + 1..].to_string();
    let ty = decl[..=at].trim().replace(" *", "*").replace('*', " *");
    (ty.trim().to_string(), name)
}

/// `body` with a `// SAFETY:` line above each line that opens an unsafe block without one
/// (`clippy::undocumented_unsafe_blocks`): such a block hands the C caller's arguments to a
/// helper of the crate whose `# Safety` contract is the OpenSHMEM 1.5 rules for routine
/// `name`'s arguments, which the caller of an OpenSHMEM routine must keep.
fn with_safety_comments(body: &str, name: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for (i, line) in body.split('\n').enumerate() {
        let opens = line.contains("unsafe {");
        let documented = out
            .last()
            .is_some_and(|l| l.trim_start().starts_with("// SAFETY:"));
        if opens && !documented {
            // The first line's indentation comes from the function's template.
            let indent = if i == 0 {
                String::new()
            } else {
                line[..line.len() - line.trim_start().len()].to_string()
            };
            out.push(format!(
                "{indent}// SAFETY: the caller passes what OpenSHMEM 1.5 requires of `{name}`'s arguments, the contract of the helper called here."
            ));
            if i == 0 {
                out.push(format!("    {line}"));
                continue;
            }
        }
        out.push(line.to_string());
    }
    out.join("\n")
}

struct Gen {
    rs: String,
    protos: String,
    count: usize,
}

impl Gen {
    /// Defines the routine with C prototype `proto` (its `shmem_` name, and the `pshmem_` twin
    /// when it has one) running `body`, a Rust block body over the parameters.
    fn export(&mut self, proto: &str, body: &str) {
        let p = parse(proto);
        let body = with_safety_comments(body, &p.name);
        let names: Vec<String> = match p.name.strip_prefix("shmem_") {
            Some(rest) => vec![p.name.clone(), format!("pshmem_{rest}")],
            None => vec![p.name.clone()],
        };
        let args: Vec<String> = p
            .params
            .iter()
            .map(|(t, n)| format!("{}: {}", rust_arg(n), rust_type(t)))
            .collect();
        let ret = match p.ret.as_str() {
            "void" => String::new(),
            t => format!(" -> {}", rust_type(t)),
        };
        for name in names {
            let _ = writeln!(
                self.rs,
                "/// OpenSHMEM `{}`{}.\n#[no_mangle]\npub(crate) unsafe extern \"C\" fn {name}({}){ret} {{\n    {body}\n}}\n",
                p.name,
                if name.starts_with('p') && name != p.name {
                    " (profiling name)"
                } else {
                    ""
                },
                args.join(", "),
            );
            let params: Vec<String> = p
                .params
                .iter()
                .map(|(t, n)| format!("{t} {n}").replace("* ", "*"))
                .chain(p.variadic.then(|| "...".to_string()))
                .collect();
            let params = if params.is_empty() {
                "void".to_string()
            } else {
                params.join(", ")
            };
            // The name in parentheses: shmem.h defines some as macros (C11 generics,
            // shmem_sync), which must not expand here.
            let sep = if p.ret.ends_with('*') { "" } else { " " };
            let _ = writeln!(self.protos, "{}{sep}({name})({params});", p.ret);
            self.count += 1;
        }
    }
}

/// A C parameter name as a Rust identifier.
fn rust_arg(name: &str) -> String {
    match name {
        "PE_start" => "pe_start".into(),
        "logPE_stride" => "log_pe_stride".into(),
        "PE_size" => "pe_size".into(),
        "PE_root" => "pe_root".into(),
        "pSync" => "p_sync".into(),
        "pWrk" => "p_wrk".into(),
        "type" => "r#type".into(),
        n => n.into(),
    }
}

fn untyped(g: &mut Gen) {
    for proto in UNTYPED {
        let p = parse(proto);
        let args: Vec<String> = p.params.iter().map(|(_, n)| rust_arg(n)).collect();
        g.export(
            proto,
            &format!("unsafe {{ crate::api::{}({}) }}", p.name, args.join(", ")),
        );
    }
}

/// The RMA routines of type `t` (with and without a context), its collectives and its
/// put-with-signal forms.
fn rma(g: &mut Gen, t: &Ty) {
    let (c, n, b) = (t.c, t.name, t.bytes);
    for ctx in ["", "ctx_"] {
        let ca = if ctx.is_empty() {
            ""
        } else {
            "shmem_ctx_t ctx, "
        };
        let cv = if ctx.is_empty() { "CTX_DEFAULT" } else { "ctx" };
        let p = format!("shmem_{ctx}{n}");
        for (op, f) in [
            ("put", "put_elems"),
            ("get", "get_elems"),
            ("put_nbi", "put_elems"),
            ("get_nbi", "get_elems"),
        ] {
            g.export(
                &format!("void {p}_{op}({ca}{c} *dest, const {c} *source, size_t nelems, int pe)"),
                &format!("unsafe {{ {f}({cv}, dest as *mut u8, source as *const u8, nelems, {b}, pe, \"{p}_{op}\") }}"),
            );
        }
        for (op, f) in [("iput", "iput_elems"), ("iget", "iget_elems")] {
            g.export(
                &format!("void {p}_{op}({ca}{c} *dest, const {c} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)"),
                &format!("unsafe {{ {f}({cv}, dest as *mut u8, source as *const u8, dst, sst, nelems, {b}, pe, \"{p}_{op}\") }}"),
            );
        }
        // A long double travels by value in x87 form, which Rust cannot declare: its p and g
        // are inline functions of shmem.h over the put and get.
        if n != "longdouble" {
            let r = t.rust();
            g.export(
                &format!("void {p}_p({ca}{c} *dest, {c} value, int pe)"),
                &format!("unsafe {{ put_elems({cv}, dest as *mut u8, &value as *const {r} as *const u8, 1, {b}, pe, \"{p}_p\") }}"),
            );
            g.export(
                &format!("{c} {p}_g({ca}const {c} *source, int pe)"),
                &format!("let mut v = std::mem::MaybeUninit::<{r}>::zeroed();\n    unsafe {{ get_elems({cv}, v.as_mut_ptr() as *mut u8, source as *const u8, 1, {b}, pe, \"{p}_g\") }};\n    // SAFETY: zeroed, then filled by the get; every bit pattern is a valid {r}.\n    unsafe {{ v.assume_init() }}"),
            );
        }
        for nbi in ["", "_nbi"] {
            let name = format!("{p}_put_signal{nbi}");
            g.export(
                &format!("void {name}({ca}{c} *dest, const {c} *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)"),
                &format!("unsafe {{ crate::api::put_signal({cv}, dest as *mut c_void, source as *const c_void, bytes_of(nelems, {b}, \"{name}\"), sig_addr, signal, sig_op, pe, \"{name}\") }}"),
            );
        }
    }
    for coll in ["fcollect", "collect", "alltoall"] {
        let name = format!("shmem_{n}_{coll}");
        g.export(
            &format!("int {name}(shmem_team_t team, {c} *dest, const {c} *source, size_t nelems)"),
            &format!("unsafe {{ crate::api::shmem_{coll}mem(team, dest as *mut c_void, source as *const c_void, bytes_of(nelems, {b}, \"{name}\")) }}"),
        );
    }
    let name = format!("shmem_{n}_alltoalls");
    g.export(
        &format!("int {name}(shmem_team_t team, {c} *dest, const {c} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems)"),
        &format!("unsafe {{ alltoalls_elems(team, dest as *mut u8, source as *const u8, dst, sst, nelems, {b}, \"{name}\") }}"),
    );
    let name = format!("shmem_{n}_broadcast");
    g.export(
        &format!("int {name}(shmem_team_t team, {c} *dest, const {c} *source, size_t nelems, int PE_root)"),
        &format!("unsafe {{ crate::api::shmem_broadcastmem(team, dest as *mut c_void, source as *const c_void, bytes_of(nelems, {b}, \"{name}\"), pe_root) }}"),
    );
}

/// The point-to-point synchronisation routines of type `t` (scalar, set and vector forms,
/// and the deprecated `shmem_TYPE_wait`).
fn p2p(g: &mut Gen, t: &Ty) {
    let (c, n, r) = (t.c, t.name, t.rust());
    let p = format!("shmem_{n}");
    g.export(
        &format!("void {p}_wait_until({c} *ivar, int cmp, {c} cmp_value)"),
        &format!("unsafe {{ wait_until(ivar as *const {r}, cmp, cmp_value, \"{p}_wait_until\") }}"),
    );
    g.export(
        &format!("void {p}_wait({c} *ivar, {c} cmp_value)"),
        &format!("unsafe {{ wait_until(ivar as *const {r}, crate::cmp::SHMEM_CMP_NE, cmp_value, \"{p}_wait\") }}"),
    );
    g.export(
        &format!("int {p}_test({c} *ivar, int cmp, {c} cmp_value)"),
        &format!("unsafe {{ test(ivar as *const {r}, cmp, cmp_value, \"{p}_test\") as c_int }}"),
    );
    // (suffix, values argument in C, the Rust Values expression)
    for (suffix, cval, values) in [
        (
            "",
            format!("{c} cmp_value"),
            "Values::One(cmp_value)".to_string(),
        ),
        (
            "_vector",
            format!("const {c} *cmp_values"),
            format!("Values::Each(cmp_values as *const {r})"),
        ),
    ] {
        let set = |op: &str| format!("{p}_{op}{suffix}");
        g.export(
            &format!("void {}({c} *ivars, size_t nelems, const int *status, int cmp, {cval})", set("wait_until_all")),
            &format!("unsafe {{ wait_set(ivars as *const {r}, nelems, status, cmp, {values}, WaitSet::All, true, \"{}\") }};", set("wait_until_all")),
        );
        g.export(
            &format!("size_t {}({c} *ivars, size_t nelems, const int *status, int cmp, {cval})", set("wait_until_any")),
            &format!("unsafe {{ wait_set(ivars as *const {r}, nelems, status, cmp, {values}, WaitSet::Any, true, \"{}\") }}", set("wait_until_any")),
        );
        g.export(
            &format!("size_t {}({c} *ivars, size_t nelems, size_t *indices, const int *status, int cmp, {cval})", set("wait_until_some")),
            &format!("unsafe {{ wait_some(ivars as *const {r}, nelems, indices, status, cmp, {values}, true, \"{}\") }}", set("wait_until_some")),
        );
        g.export(
            &format!("int {}({c} *ivars, size_t nelems, const int *status, int cmp, {cval})", set("test_all")),
            &format!("unsafe {{ wait_set(ivars as *const {r}, nelems, status, cmp, {values}, WaitSet::All, false, \"{}\") as c_int }}", set("test_all")),
        );
        g.export(
            &format!("size_t {}({c} *ivars, size_t nelems, const int *status, int cmp, {cval})", set("test_any")),
            &format!("unsafe {{ wait_set(ivars as *const {r}, nelems, status, cmp, {values}, WaitSet::Any, false, \"{}\") }}", set("test_any")),
        );
        g.export(
            &format!("size_t {}({c} *ivars, size_t nelems, size_t *indices, const int *status, int cmp, {cval})", set("test_some")),
            &format!("unsafe {{ wait_some(ivars as *const {r}, nelems, indices, status, cmp, {values}, false, \"{}\") }}", set("test_some")),
        );
    }
}

/// One atomic operation: name, extra C arguments, whether it returns the old value, the
/// pointer argument's name, the `Amo`, its two operands (Rust expressions).
struct AmoOp {
    op: &'static str,
    extra: String,
    fetch: bool,
    ptr: &'static str,
    amo: &'static str,
    a: String,
    b: String,
}

fn amos(g: &mut Gen, t: &Ty) {
    let (c, n, b) = (t.c, t.name, t.bytes);
    let op =
        |op: &'static str, extra: &str, fetch: bool, amo: &'static str, a: String, b: String| {
            AmoOp {
                op,
                extra: extra.replace("T ", &format!("{c} ")),
                fetch,
                ptr: if op == "fetch" { "source" } else { "dest" },
                amo,
                a,
                b,
            }
        };
    let zero = || "0".to_string();
    let mut ops = vec![
        op("fetch", "", true, "Fetch", zero(), zero()),
        op("set", ", T value", false, "Set", t.to_word("value"), zero()),
        op(
            "swap",
            ", T value",
            true,
            "Swap",
            t.to_word("value"),
            zero(),
        ),
    ];
    if t.has('a') {
        ops.extend([
            op(
                "compare_swap",
                ", T cond, T value",
                true,
                "CompareSwap",
                t.to_word("cond"),
                t.to_word("value"),
            ),
            op("fetch_inc", "", true, "Add", "1".into(), zero()),
            op("inc", "", false, "Add", "1".into(), zero()),
            op(
                "fetch_add",
                ", T value",
                true,
                "Add",
                t.to_word("value"),
                zero(),
            ),
            op("add", ", T value", false, "Add", t.to_word("value"), zero()),
        ]);
    }
    if t.has('b') {
        for (name, fetch_name, amo) in [
            ("and", "fetch_and", "And"),
            ("or", "fetch_or", "Or"),
            ("xor", "fetch_xor", "Xor"),
        ] {
            ops.push(op(
                fetch_name,
                ", T value",
                true,
                amo,
                t.to_word("value"),
                zero(),
            ));
            ops.push(op(
                name,
                ", T value",
                false,
                amo,
                t.to_word("value"),
                zero(),
            ));
        }
    }
    let deprecated = |op: &'static str| match op {
        "fetch_inc" => Some("finc"),
        "fetch_add" => Some("fadd"),
        "compare_swap" => Some("cswap"),
        "fetch" | "set" | "swap" | "inc" | "add" => Some(op),
        _ => None,
    };
    for o in &ops {
        let cptr = if o.ptr == "source" {
            format!("const {c} *source")
        } else {
            format!("{c} *dest")
        };
        let mut names = vec![(format!("shmem_{n}_atomic_{}", o.op), false)];
        names.push((format!("shmem_ctx_{n}_atomic_{}", o.op), true));
        if t.has('d') {
            if let Some(d) = deprecated(o.op) {
                if !t.is_float() || matches!(o.op, "fetch" | "set" | "swap") {
                    names.push((format!("shmem_{n}_{d}"), false));
                }
            }
        }
        for (name, with_ctx) in names {
            let ca = if with_ctx { "shmem_ctx_t ctx, " } else { "" };
            let cv = if with_ctx { "ctx" } else { "CTX_DEFAULT" };
            let call = format!(
                "amo({cv}, {} as *const u8, pe, \"{name}\", {b}, Amo::{}, {}, {}, {})",
                o.ptr, o.amo, o.a, o.b, o.fetch
            );
            if o.fetch {
                g.export(
                    &format!("{c} {name}({ca}{cptr}{}, int pe)", o.extra),
                    &t.word_to_value(&call),
                );
            } else {
                g.export(
                    &format!("void {name}({ca}{cptr}{}, int pe)", o.extra),
                    &format!("{call};"),
                );
            }
        }
        if o.fetch {
            // The 1.5 nonblocking fetching forms: the old value goes to *fetch. They
            // complete before returning (within what quiet would guarantee).
            for with_ctx in [false, true] {
                let name = format!(
                    "shmem_{}{n}_atomic_{}_nbi",
                    if with_ctx { "ctx_" } else { "" },
                    o.op
                );
                let ca = if with_ctx { "shmem_ctx_t ctx, " } else { "" };
                let cv = if with_ctx { "ctx" } else { "CTX_DEFAULT" };
                let call = format!(
                    "amo({cv}, {} as *const u8, pe, \"{name}\", {b}, Amo::{}, {}, {}, true)",
                    o.ptr, o.amo, o.a, o.b
                );
                g.export(
                    &format!("void {name}({ca}{c} *fetch, {cptr}{}, int pe)", o.extra),
                    &format!("check_ptr(fetch as *const {r}, \"{name}\");\n    let old = {};\n    // SAFETY: checked non-null and aligned; the caller's fetch buffer.\n    unsafe {{ *fetch = old }}", t.word_to_value(&call), r = t.rust()),
                );
            }
        }
    }
}

fn reductions(g: &mut Gen, t: &Ty) {
    let (c, n, k) = (t.c, t.name, t.kind);
    let mut ops: Vec<(&str, &str)> = Vec::new();
    if t.has('m') {
        ops.extend([("min", "Min"), ("max", "Max")]);
    }
    if t.has('s') {
        ops.extend([("sum", "Sum"), ("prod", "Prod")]);
    }
    if t.has('l') {
        ops.extend([("and", "Band"), ("or", "Bor"), ("xor", "Bxor")]);
    }
    for (op, o) in &ops {
        let name = format!("shmem_{n}_{op}_reduce");
        g.export(
            &format!("int {name}(shmem_team_t team, {c} *dest, const {c} *source, size_t nreduce)"),
            &format!("unsafe {{ team_reduce(team, dest as *mut u8, source as *const u8, nreduce, {k}, &Op::{o}, \"{name}\") }}"),
        );
    }
    let mut deprecated: Vec<(&str, &str)> = Vec::new();
    if t.has('t') {
        deprecated.extend([
            ("sum", "Sum"),
            ("prod", "Prod"),
            ("min", "Min"),
            ("max", "Max"),
        ]);
    }
    if t.has('T') {
        deprecated.extend([("sum", "Sum"), ("prod", "Prod")]);
    }
    if t.has('o') {
        deprecated.extend([("and", "Band"), ("or", "Bor"), ("xor", "Bxor")]);
    }
    for (op, o) in deprecated {
        let name = format!("shmem_{n}_{op}_to_all");
        g.export(
            &format!("void {name}({c} *dest, const {c} *source, int nreduce, int PE_start, int logPE_stride, int PE_size, {c} *pWrk, long *pSync)"),
            &format!("let _ = (p_wrk, p_sync);\n    unsafe {{ active_reduce(dest as *mut u8, source as *const u8, nreduce, pe_start, log_pe_stride, pe_size, {k}, &Op::{o}, \"{name}\") }}"),
        );
    }
}

/// The sized routines (`put8` .. `put128`, `iput`, `put_signal`) and the byte ones
/// (`putmem`, `getmem`, `_nbi`, `putmem_signal`), with and without a context.
fn sized(g: &mut Gen) {
    for (size, b) in [
        ("8", 1),
        ("16", 2),
        ("32", 4),
        ("64", 8),
        ("128", 16),
        ("mem", 1),
    ] {
        for ctx in ["", "ctx_"] {
            let ca = if ctx.is_empty() {
                ""
            } else {
                "shmem_ctx_t ctx, "
            };
            let cv = if ctx.is_empty() { "CTX_DEFAULT" } else { "ctx" };
            for (op, f) in [
                ("put", "put_elems"),
                ("get", "get_elems"),
                ("put_nbi", "put_elems"),
                ("get_nbi", "get_elems"),
            ] {
                let name = format!(
                    "shmem_{ctx}{}",
                    op.replacen("put", &format!("put{size}"), 1).replacen(
                        "get",
                        &format!("get{size}"),
                        1
                    )
                );
                g.export(
                    &format!("void {name}({ca}void *dest, const void *source, size_t nelems, int pe)"),
                    &format!("unsafe {{ {f}({cv}, dest as *mut u8, source as *const u8, nelems, {b}, pe, \"{name}\") }}"),
                );
            }
            for nbi in ["", "_nbi"] {
                let name = format!("shmem_{ctx}put{size}_signal{nbi}");
                g.export(
                    &format!("void {name}({ca}void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)"),
                    &format!("unsafe {{ crate::api::put_signal({cv}, dest, source, bytes_of(nelems, {b}, \"{name}\"), sig_addr, signal, sig_op, pe, \"{name}\") }}"),
                );
            }
            // There is no strided putmem.
            let strided: &[_] = if size == "mem" {
                &[]
            } else {
                &[("iput", "iput_elems"), ("iget", "iget_elems")]
            };
            for (op, f) in strided {
                let name = format!("shmem_{ctx}{op}{size}");
                g.export(
                    &format!("void {name}({ca}void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)"),
                    &format!("unsafe {{ {f}({cv}, dest as *mut u8, source as *const u8, dst, sst, nelems, {b}, pe, \"{name}\") }}"),
                );
            }
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut g = Gen {
        rs: String::from(
            "// Written by build.rs from its tables: every OpenSHMEM entry point of libshmem.\n\n",
        ),
        protos: String::from(
            "/* Written by build.rs: the prototype of every routine libshmem defines. */\n",
        ),
        count: 0,
    };
    untyped(&mut g);
    for t in TYPES {
        if t.has('r') {
            rma(&mut g, t);
        }
        if t.has('w') {
            p2p(&mut g, t);
        }
        if t.has('x') {
            amos(&mut g, t);
        }
        reductions(&mut g, t);
    }
    sized(&mut g);
    let _ = writeln!(
        g.rs,
        "/// How many entry points this file defines (both names of each routine).\npub const EXPORTED_ROUTINES: usize = {};",
        g.count
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("exports.rs"), &g.rs).expect("write exports.rs");
    std::fs::write(out.join("prototypes.h"), &g.protos).expect("write prototypes.h");
}
