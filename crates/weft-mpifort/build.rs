//! Build script of weft-mpifort: generates MPI's Fortran bindings for gfortran from the C
//! prototypes of the standard ABI (`../weft-mpi/include/mpi_proto.h`) and the constants of
//! `mpi.h`, and builds them.
//!
//! 1. Every `int MPI_Xxx(...)` prototype whose arguments all have a Fortran form becomes a C
//!    procedure `mpi_xxx_` with gfortran's calling convention (arguments by reference,
//!    `ierror` last, hidden `size_t` lengths of CHARACTER arguments after it), which converts
//!    integer handles with the ABI's `MPI_*_fromint`/`_toint`, maps the addresses of
//!    MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, MPI_ERRCODES_IGNORE, MPI_UNWEIGHTED and
//!    MPI_WEIGHTS_EMPTY to the C constants, turns LOGICAL values into C truth and back,
//!    0-based indices into 1-based ones and CHARACTER arguments into C strings and back.
//!    Prototypes with callbacks, `char**` or `_c` (large count) forms are listed as not bound.
//! 2. A small C program including `mpi.h` prints every constant (its kind found with C11
//!    `_Generic`); from its output come `mpif.h` and the constants of modules `mpi` and
//!    `mpi_f08`.
//! 3. Module `mpi` declares an explicit interface for every bound procedure (choice buffers
//!    with `!GCC$ ATTRIBUTES NO_ARG_CHECK`); module `mpi_f08` defines the handle types and
//!    `MPI_Xxx_f08` procedures over the same C procedures.
//! 4. `cc` and `gfortran` compile all of it into `libmpifort_abi.so` (which uses the symbols
//!    of `libmpi_abi.so`, linked beside it) and `mpi.mod`/`mpi_f08.mod`.
//!
//! Without gfortran (or `WEFT_FC`) nothing is built: the crate records why, `weft install`
//! says so, and the Fortran tests fail.

#![allow(
    clippy::disallowed_methods,
    reason = "a build script's inputs are the variables cargo sets"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// C handle types and the prefix of their `_toint`/`_fromint` functions.
const HANDLES: &[(&str, &str)] = &[
    ("MPI_Comm", "MPI_Comm"),
    ("MPI_Datatype", "MPI_Type"),
    ("MPI_Group", "MPI_Group"),
    ("MPI_Request", "MPI_Request"),
    ("MPI_Op", "MPI_Op"),
    ("MPI_Info", "MPI_Info"),
    ("MPI_Errhandler", "MPI_Errhandler"),
    ("MPI_Message", "MPI_Message"),
    ("MPI_Session", "MPI_Session"),
    ("MPI_File", "MPI_File"),
    ("MPI_Win", "MPI_Win"),
];

/// Integer arguments that are LOGICAL in Fortran (MPI-4.1's Fortran bindings).
const LOGICALS: &[&str] = &[
    "flag",
    "reorder",
    "periods",
    "remain_dims",
    "commute",
    "weighted",
];

/// Procedures written by hand in `src/special.c` (and `fortran/*.f90`), not generated.
const HANDWRITTEN: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Op_create",
    "MPI_Op_free",
    "MPI_Pcontrol",
    "MPI_Comm_get_attr",
    "MPI_Comm_set_attr",
    "MPI_Win_get_attr",
    "MPI_Win_set_attr",
    "MPI_Type_get_attr",
    "MPI_Type_set_attr",
    "MPI_Attr_get",
    "MPI_Attr_put",
    "MPI_Keyval_create",
    "MPI_Info_create_env",
    "MPI_Grequest_start",
    "MPI_Comm_create_keyval",
    "MPI_Type_create_keyval",
    "MPI_Win_create_keyval",
    "MPI_Comm_create_errhandler",
    "MPI_Win_create_errhandler",
    "MPI_File_create_errhandler",
    "MPI_Session_create_errhandler",
];

#[derive(Clone, Debug)]
struct Param {
    base: String,
    ptr: usize,
    array: bool,
    ranges: bool,
    konst: bool,
    name: String,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// A choice buffer (`void*`), passed through with the special addresses mapped.
    Choice,
    /// `void* baseptr`: INTEGER(KIND=MPI_ADDRESS_KIND) the C library writes an address to.
    BasePtr,
    /// INTEGER by value in C.
    Int,
    /// LOGICAL by value in C.
    Logical,
    /// INTEGER reference or array, passed through.
    IntRef,
    /// LOGICAL output scalar.
    LogicalOut,
    /// LOGICAL array (gfortran's LOGICAL is a 4-byte 1/0, as C's int truth).
    LogicalArray,
    /// `int ranges[][3]`.
    Ranges,
    /// A 0-based index written by C, 1-based in Fortran.
    IndexOut,
    /// 0-based indices (`*outcount` of them).
    IndicesOut,
    /// Graph weights: MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY addresses mapped.
    Weights,
    /// MPI_Aint / MPI_Offset / MPI_Count by value.
    Wide,
    /// MPI_Aint / MPI_Offset / MPI_Count reference or array.
    WideRef,
    /// Handle by value.
    Handle,
    /// Handle reference (in, out or both).
    HandleRef,
    /// Handle array.
    HandleArray,
    /// One status.
    Status,
    /// Array of statuses.
    Statuses,
    /// Input string.
    StrIn,
    /// Output string.
    StrOut,
}

fn parse_param(p: &str) -> Option<Param> {
    let p = p.trim();
    if p == "..." {
        return None;
    }
    let konst = p.starts_with("const ");
    let p = p.trim_start_matches("const ");
    let (ty, name) = p.rsplit_once([' ', '*'])?;
    let ptr = p.matches('*').count();
    let base = ty.trim_end_matches(['*', ' ']).trim().to_string();
    let ranges = name.ends_with("[][3]");
    let array = name.contains('[');
    let name = name.split('[').next().unwrap().trim().to_string();
    Some(Param {
        base,
        ptr,
        array,
        ranges,
        konst,
        name,
    })
}

fn handle_prefix(base: &str) -> Option<&'static str> {
    HANDLES.iter().find(|(t, _)| *t == base).map(|(_, p)| *p)
}

fn kind_of(func: &str, p: &Param) -> Result<Kind, String> {
    let refd = p.ptr > 0 || p.array;
    let logical = LOGICALS.contains(&p.name.as_str());
    Ok(match p.base.as_str() {
        "void" if p.ptr == 1 && !p.array => match p.name.as_str() {
            "baseptr" => Kind::BasePtr,
            "extra_state" | "attribute_val" | "logical_true" | "logical_false" => {
                return Err(format!("{} is not a buffer", p.name))
            }
            _ => Kind::Choice,
        },
        "int" if p.ranges => Kind::Ranges,
        "int" if !refd && logical => Kind::Logical,
        "int" if !refd => Kind::Int,
        "int" if p.name == "index" => Kind::IndexOut,
        "int" if p.name == "array_of_indices" => Kind::IndicesOut,
        "int" if p.name.ends_with("weights") => Kind::Weights,
        "int" if p.name == "array_of_errcodes" => return Err("errcodes".into()),
        "int" if logical && p.array => Kind::LogicalArray,
        "int" if logical => Kind::LogicalOut,
        "int" if p.ptr <= 1 => Kind::IntRef,
        "MPI_Aint" | "MPI_Offset" | "MPI_Count" if !refd => Kind::Wide,
        "MPI_Aint" | "MPI_Offset" | "MPI_Count" if p.ptr <= 1 => Kind::WideRef,
        "MPI_Status" if p.array => Kind::Statuses,
        "MPI_Status" if p.ptr == 1 => Kind::Status,
        "char" if p.ptr + p.array as usize == 1 && p.konst => Kind::StrIn,
        "char" if p.ptr + p.array as usize == 1 => Kind::StrOut,
        b if handle_prefix(b).is_some() && p.array => {
            array_length(func, &p.name, &[])?;
            Kind::HandleArray
        }
        b if handle_prefix(b).is_some() && p.ptr == 1 => Kind::HandleRef,
        b if handle_prefix(b).is_some() && p.ptr == 0 => Kind::Handle,
        b => return Err(format!("argument {} of type {b}", p.name)),
    })
}

/// The C expression for the length of handle array `name` of `func`.
fn array_length(func: &str, name: &str, params: &[Param]) -> Result<String, String> {
    let has = |n: &str| params.is_empty() || params.iter().any(|p| p.name == n);
    Ok(match name {
        "array_of_requests" if has("count") && !func.contains("some") => "*count".into(),
        "array_of_requests" => "*incount".into(),
        "array_of_types" => "*count".into(),
        "array_of_datatypes" => "*max_datatypes".into(),
        "sendtypes" if func.contains("eighbor") => {
            "weft_f_degree(MPI_Comm_fromint(*comm), 1)".into()
        }
        "recvtypes" if func.contains("eighbor") => {
            "weft_f_degree(MPI_Comm_fromint(*comm), 0)".into()
        }
        "sendtypes" | "recvtypes" => "weft_f_degree(MPI_Comm_fromint(*comm), 2)".into(),
        "array_of_info" => return Err("array_of_info".into()),
        _ => return Err(format!("no length rule for handle array {name}")),
    })
}

struct Proto {
    name: String,
    params: Vec<Param>,
    kinds: Vec<Kind>,
}

/// The Fortran declaration of one dummy argument (`kind_suffix` for handles: "" for
/// INTEGER handles, the f08 type otherwise).
fn fortran_decl(p: &Param, k: Kind, f08: bool) -> String {
    let n = &p.name;
    // Module mpi checks array arguments' type and kind but not their rank: programs written
    // for implicit interfaces pass a scalar (`0` for ignored counts) or an array element.
    // (gfortran allows NO_ARG_CHECK on numeric arguments only: not CHARACTER, not LOGICAL.)
    let lenient = !f08
        && (p.array || matches!(k, Kind::Ranges | Kind::Statuses))
        && !matches!(k, Kind::StrIn | Kind::StrOut | Kind::LogicalArray);
    let decl = fortran_decl_strict(p, k, f08);
    if lenient {
        format!("!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}\n      {decl}")
    } else {
        decl
    }
}

/// [`fortran_decl`] with every argument checked.
fn fortran_decl_strict(p: &Param, k: Kind, f08: bool) -> String {
    let n = &p.name;
    let wide = |b: &str| match b {
        "MPI_Aint" => "integer(kind=MPI_ADDRESS_KIND)",
        "MPI_Offset" => "integer(kind=MPI_OFFSET_KIND)",
        _ => "integer(kind=MPI_COUNT_KIND)",
    };
    let handle = |b: &str| {
        if f08 {
            format!("type({b})")
        } else {
            "integer".to_string()
        }
    };
    match k {
        Kind::Choice => {
            format!("!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}\n      type(*), dimension(*) :: {n}")
        }
        Kind::BasePtr => format!("integer(kind=MPI_ADDRESS_KIND) :: {n}"),
        Kind::Int | Kind::IndexOut => format!("integer :: {n}"),
        Kind::IntRef if p.array => format!("integer :: {n}(*)"),
        Kind::IntRef => format!("integer :: {n}"),
        Kind::Logical | Kind::LogicalOut => format!("logical :: {n}"),
        Kind::LogicalArray => format!("logical :: {n}(*)"),
        Kind::Ranges => format!("integer :: {n}(3, *)"),
        Kind::IndicesOut | Kind::Weights => format!("integer :: {n}(*)"),
        Kind::Wide => format!("{} :: {n}", wide(&p.base)),
        Kind::WideRef if p.array => format!("{} :: {n}(*)", wide(&p.base)),
        Kind::WideRef => format!("{} :: {n}", wide(&p.base)),
        Kind::Handle | Kind::HandleRef => format!("{} :: {n}", handle(&p.base)),
        Kind::HandleArray => format!("{} :: {n}(*)", handle(&p.base)),
        Kind::Status if f08 => format!("type(MPI_Status) :: {n}"),
        Kind::Status => format!("integer :: {n}(MPI_STATUS_SIZE)"),
        Kind::Statuses if f08 => format!("type(MPI_Status) :: {n}(*)"),
        Kind::Statuses => format!("integer :: {n}(MPI_STATUS_SIZE, *)"),
        Kind::StrIn | Kind::StrOut => format!("character(len=*) :: {n}"),
    }
}

/// One Fortran interface body `name(args, ierror)` of `p` (INTEGER handles).
fn interface_body(out: &mut String, fname: &str, p: &Proto) {
    let mut args: Vec<&str> = p.params.iter().map(|x| x.name.as_str()).collect();
    args.push("ierror");
    write_wrapped(out, &format!("    subroutine {fname}({})", args.join(", ")));
    out.push_str("      import\n      implicit none\n");
    for (x, k) in p.params.iter().zip(&p.kinds) {
        writeln!(out, "      {}", fortran_decl(x, *k, false)).unwrap();
    }
    writeln!(out, "      integer :: ierror\n    end subroutine {fname}").unwrap();
}

/// Writes a free-form Fortran line, continued with `&` when longer than 100 characters.
fn write_wrapped(out: &mut String, line: &str) {
    let mut rest = line;
    while rest.len() > 100 {
        let cut = rest[..100].rfind(", ").map(|i| i + 2).unwrap_or(rest.len());
        if cut >= rest.len() {
            break;
        }
        writeln!(out, "{}&", &rest[..cut]).unwrap();
        rest = &rest[cut..];
        out.push_str("        ");
    }
    writeln!(out, "{rest}").unwrap();
}

fn c_wrapper(out: &mut String, p: &Proto) {
    let lower = p.name.to_lowercase();
    let mut sig = Vec::new();
    let mut lens = Vec::new();
    for (x, k) in p.params.iter().zip(&p.kinds) {
        let n = &x.name;
        let t = match k {
            Kind::Choice => format!("void *{n}"),
            Kind::BasePtr => format!("void *{n}"),
            Kind::Wide | Kind::WideRef => format!("{} *{n}", x.base),
            Kind::Status | Kind::Statuses => format!("MPI_Status *{n}"),
            Kind::StrIn | Kind::StrOut => {
                lens.push(format!("size_t {n}_len"));
                format!("char *{n}")
            }
            _ => format!("MPI_Fint *{n}"),
        };
        sig.push(t);
    }
    sig.push("MPI_Fint *ierror".into());
    sig.extend(lens);
    writeln!(out, "void {lower}_({}) {{", sig.join(", ")).unwrap();
    let mut pre = String::new();
    let mut args = Vec::new();
    let mut post = String::new();
    let mut cleanup = String::new();
    for (x, k) in p.params.iter().zip(&p.kinds) {
        let n = &x.name;
        match k {
            Kind::Choice => args.push(format!("weft_f_buf({n})")),
            Kind::BasePtr => args.push(n.clone()),
            // The C call writes into a buffer of WEFT_F_MAX_STRING + 1 bytes.
            Kind::Int if n == "valuelen" => args.push(format!(
                "(*{n} < WEFT_F_MAX_STRING ? *{n} : WEFT_F_MAX_STRING)"
            )),
            Kind::Int => args.push(format!("*{n}")),
            Kind::Logical => args.push(format!("weft_f_logical_in(*{n})")),
            Kind::IntRef | Kind::LogicalArray => args.push(n.clone()),
            Kind::Ranges => args.push(format!("(int (*)[3]){n}")),
            Kind::LogicalOut => {
                args.push(n.clone());
                writeln!(
                    post,
                    "  if (rc == MPI_SUCCESS) *{n} = weft_f_logical_out(*{n});"
                )
                .unwrap();
            }
            Kind::IndexOut => {
                args.push(n.clone());
                writeln!(post, "  if (rc == MPI_SUCCESS && *{n} >= 0) *{n} += 1;").unwrap();
            }
            Kind::IndicesOut => {
                args.push(n.clone());
                writeln!(
                    post,
                    "  if (*outcount != MPI_UNDEFINED) for (int i = 0; i < *outcount; i++) {n}[i] += 1;"
                )
                .unwrap();
            }
            Kind::Weights => args.push(format!("weft_f_weights({n})")),
            Kind::Wide => args.push(format!("*{n}")),
            Kind::WideRef => args.push(n.clone()),
            Kind::Handle => {
                let pre_ = handle_prefix(&x.base).unwrap();
                writeln!(pre, "  {} h_{n} = {pre_}_fromint(*{n});", x.base).unwrap();
                args.push(format!("h_{n}"));
            }
            Kind::HandleRef => {
                let pre_ = handle_prefix(&x.base).unwrap();
                writeln!(pre, "  {} h_{n} = {pre_}_fromint(*{n});", x.base).unwrap();
                args.push(format!("&h_{n}"));
                writeln!(post, "  *{n} = {pre_}_toint(h_{n});").unwrap();
            }
            Kind::HandleArray => {
                let pre_ = handle_prefix(&x.base).unwrap();
                let len = array_length(&p.name, n, &p.params).unwrap();
                writeln!(
                    pre,
                    "  int n_{n} = {len};\n  {b} s_{n}[WEFT_F_STACK_HANDLES];\n  {b} *h_{n} = n_{n} <= WEFT_F_STACK_HANDLES ? s_{n} : malloc(sizeof({b}) * (size_t)n_{n});\n  if (!h_{n}) {{ *ierror = MPI_ERR_NO_MEM; return; }}\n  for (int i = 0; i < n_{n}; i++) h_{n}[i] = {pre_}_fromint({n}[i]);",
                    b = x.base
                )
                .unwrap();
                args.push(format!("h_{n}"));
                if !x.konst {
                    writeln!(
                        post,
                        "  for (int i = 0; i < n_{n}; i++) {n}[i] = {pre_}_toint(h_{n}[i]);"
                    )
                    .unwrap();
                }
                writeln!(cleanup, "  if (h_{n} != s_{n}) free(h_{n});").unwrap();
            }
            Kind::Status => args.push(format!("weft_f_status({n})")),
            Kind::Statuses => args.push(format!("weft_f_statuses({n})")),
            Kind::StrIn => {
                writeln!(
                    pre,
                    "  char *c_{n} = weft_f_str_in({n}, {n}_len, {});\n  if (!c_{n}) {{ *ierror = MPI_ERR_NO_MEM; return; }}",
                    // Info keys and values lose their leading blanks too (MPI-4.1 §10).
                    p.name.starts_with("MPI_Info_") as u8
                )
                .unwrap();
                args.push(format!("c_{n}"));
                writeln!(cleanup, "  free(c_{n});").unwrap();
            }
            Kind::StrOut => {
                writeln!(
                    pre,
                    "  char c_{n}[WEFT_F_MAX_STRING + 1];\n  memset(c_{n}, 0, sizeof c_{n});"
                )
                .unwrap();
                args.push(format!("c_{n}"));
                // Nothing is written when the call fails or finds nothing (`flag` false).
                let found = if p.params.iter().any(|x| x.name == "flag") {
                    " && *flag"
                } else {
                    ""
                };
                if p.name == "MPI_Info_get_string" {
                    // Fortran's buflen counts characters without C's terminating NUL, in
                    // and out; 0 asks only for the length (MPI-4.1 §10).
                    writeln!(
                        pre,
                        "  MPI_Fint f_buflen = *buflen;\n  *buflen = f_buflen <= 0 ? 0 : f_buflen < WEFT_F_MAX_STRING ? f_buflen + 1 : WEFT_F_MAX_STRING + 1;"
                    )
                    .unwrap();
                    writeln!(
                        post,
                        "  if (rc == MPI_SUCCESS && *flag && f_buflen > 0) weft_f_str_out(c_{n}, {n}, (size_t)f_buflen < {n}_len ? (size_t)f_buflen : {n}_len);\n  if (rc == MPI_SUCCESS && *flag && f_buflen > 0 && (size_t)f_buflen < {n}_len) memset({n} + f_buflen, ' ', {n}_len - (size_t)f_buflen);\n  if (rc == MPI_SUCCESS && *flag) *buflen -= 1; else *buflen = f_buflen;"
                    )
                    .unwrap();
                } else {
                    writeln!(
                        post,
                        "  if (rc == MPI_SUCCESS{found}) weft_f_str_out(c_{n}, {n}, {n}_len);"
                    )
                    .unwrap();
                }
            }
        }
    }
    out.push_str(&pre);
    writeln!(out, "  int rc = {}({});", p.name, args.join(", ")).unwrap();
    out.push_str(&post);
    out.push_str(&cleanup);
    out.push_str("  *ierror = rc;\n}\n");
    writeln!(
        out,
        "void weft_f_{short}_() __attribute__((alias(\"{lower}_\")));\nvoid pmpi_{short}_() __attribute__((alias(\"{lower}_\")));\n",
        short = lower.trim_start_matches("mpi_")
    )
    .unwrap();
}

/// The f08 procedure `MPI_Xxx_f08` of `p`, calling the C procedure through its interface
/// `weft_f_xxx`.
fn f08_procedure(out: &mut String, p: &Proto) {
    let short = p.name.trim_start_matches("MPI_").to_lowercase();
    let mut args: Vec<&str> = p.params.iter().map(|x| x.name.as_str()).collect();
    args.push("ierror");
    write_wrapped(
        out,
        &format!("  subroutine {}_f08({})", p.name, args.join(", ")),
    );
    for (x, k) in p.params.iter().zip(&p.kinds) {
        writeln!(out, "      {}", fortran_decl(x, *k, true)).unwrap();
    }
    out.push_str("      integer, optional, intent(out) :: ierror\n      integer :: e\n");
    let call: Vec<String> = p
        .params
        .iter()
        .zip(&p.kinds)
        .map(|(x, k)| match k {
            Kind::Handle | Kind::HandleRef => format!("{}%MPI_VAL", x.name),
            _ => x.name.clone(),
        })
        .chain(std::iter::once("e".to_string()))
        .collect();
    write_wrapped(
        out,
        &format!("      call weft_f_{short}({})", call.join(", ")),
    );
    writeln!(
        out,
        "      if (present(ierror)) ierror = e\n  end subroutine {}_f08\n",
        p.name
    )
    .unwrap();
}

/// The interface `weft_f_xxx` of `p` with f08 handle types (same memory as INTEGER).
fn f08_interface(out: &mut String, p: &Proto) {
    let short = p.name.trim_start_matches("MPI_").to_lowercase();
    let mut args: Vec<&str> = p.params.iter().map(|x| x.name.as_str()).collect();
    args.push("ierror");
    write_wrapped(
        out,
        &format!("    subroutine weft_f_{short}({})", args.join(", ")),
    );
    out.push_str("      import\n      implicit none\n");
    for (x, k) in p.params.iter().zip(&p.kinds) {
        let decl = match k {
            // The f08 procedure passes a handle's INTEGER component.
            Kind::Handle | Kind::HandleRef => format!("integer :: {}", x.name),
            _ => fortran_decl(x, *k, true),
        };
        writeln!(out, "      {decl}").unwrap();
    }
    writeln!(
        out,
        "      integer :: ierror\n    end subroutine weft_f_{short}"
    )
    .unwrap();
}

/// Objects with attribute procedures written in `src/special.c`: (name part, f08 type, name of
/// the handle argument).
const ATTR_OBJECTS: &[(&str, &str, &str)] = &[
    ("Comm", "MPI_Comm", "comm"),
    ("Win", "MPI_Win", "win"),
    ("Type", "MPI_Datatype", "datatype"),
];

/// Module `mpi`'s interfaces of the attribute procedures of `src/special.c`.
fn mpi_attr_interfaces(out: &mut String) {
    for (obj, _, h) in ATTR_OBJECTS {
        let key = format!("{}_keyval", obj.to_lowercase());
        for get in [true, false] {
            let (name, flag) = if get {
                (format!("MPI_{obj}_get_attr"), ", flag")
            } else {
                (format!("MPI_{obj}_set_attr"), "")
            };
            writeln!(
                out,
                "    subroutine {name}({h}, {key}, attribute_val{flag}, ierror)\n      import\n      integer :: {h}, {key}, ierror\n      integer(kind=MPI_ADDRESS_KIND) :: attribute_val"
            )
            .unwrap();
            if get {
                out.push_str("      logical :: flag\n");
            }
            writeln!(out, "    end subroutine {name}").unwrap();
        }
    }
}

/// Module `mpi_f08`'s declarations for the attribute procedures of `src/special.c` and the
/// handle comparison operators; [`mpi_f08_attr_and_compare_procs`] writes their bodies.
fn mpi_f08_attr_and_compare_decls(out: &mut String) {
    out.push_str("  interface\n");
    for (obj, _, h) in ATTR_OBJECTS {
        let lower = obj.to_lowercase();
        for get in [true, false] {
            let (verb, flag) = if get { ("get", ", flag") } else { ("set", "") };
            writeln!(
                out,
                "    subroutine weft_f_{lower}_{verb}_attr({h}, keyval, val{flag}, ierror)\n      import :: MPI_ADDRESS_KIND\n      integer :: {h}, keyval, ierror\n      integer(kind=MPI_ADDRESS_KIND) :: val"
            )
            .unwrap();
            if get {
                out.push_str("      logical :: flag\n");
            }
            writeln!(out, "    end subroutine weft_f_{lower}_{verb}_attr").unwrap();
        }
    }
    out.push_str("  end interface\n");
    for (obj, _, _) in ATTR_OBJECTS {
        let lower = obj.to_lowercase();
        for verb in ["get", "set"] {
            writeln!(
                out,
                "  interface MPI_{obj}_{verb}_attr\n    module procedure MPI_{obj}_{verb}_attr_f08\n  end interface MPI_{obj}_{verb}_attr\n  private :: weft_f_{lower}_{verb}_attr"
            )
            .unwrap();
        }
    }
    for (op, suffix) in [("==", "eq"), ("/=", "ne")] {
        let procs: Vec<String> = HANDLES
            .iter()
            .map(|(_, prefix)| format!("weft_{}_{suffix}", prefix[4..].to_lowercase()))
            .collect();
        writeln!(out, "  interface operator({op})").unwrap();
        write_wrapped(out, &format!("    module procedure {}", procs.join(", ")));
        out.push_str("  end interface\n");
    }
}

/// The bodies declared by [`mpi_f08_attr_and_compare_decls`].
fn mpi_f08_attr_and_compare_procs(out: &mut String) {
    for (obj, ty, h) in ATTR_OBJECTS {
        let lower = obj.to_lowercase();
        let key = format!("{lower}_keyval");
        writeln!(
            out,
            "  subroutine MPI_{obj}_get_attr_f08({h}, {key}, attribute_val, flag, ierror)\n    type({ty}), intent(in) :: {h}\n    integer, intent(in) :: {key}\n    integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val\n    logical, intent(out) :: flag\n    integer, optional, intent(out) :: ierror\n    integer :: e\n    call weft_f_{lower}_get_attr({h}%MPI_VAL, {key}, attribute_val, flag, e)\n    if (present(ierror)) ierror = e\n  end subroutine MPI_{obj}_get_attr_f08\n"
        )
        .unwrap();
        // The value is copied: the C side keeps the address of what it is given.
        writeln!(
            out,
            "  subroutine MPI_{obj}_set_attr_f08({h}, {key}, attribute_val, ierror)\n    type({ty}), intent(in) :: {h}\n    integer, intent(in) :: {key}\n    integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val\n    integer, optional, intent(out) :: ierror\n    integer :: e\n    integer(kind=MPI_ADDRESS_KIND) :: v\n    v = attribute_val\n    call weft_f_{lower}_set_attr({h}%MPI_VAL, {key}, v, e)\n    if (present(ierror)) ierror = e\n  end subroutine MPI_{obj}_set_attr_f08\n"
        )
        .unwrap();
    }
    for (t, prefix) in HANDLES {
        let short = prefix[4..].to_lowercase();
        for (op, suffix) in [("==", "eq"), ("/=", "ne")] {
            writeln!(
                out,
                "  elemental logical function weft_{short}_{suffix}(a, b)\n    type({t}), intent(in) :: a, b\n    weft_{short}_{suffix} = a%MPI_VAL {op} b%MPI_VAL\n  end function weft_{short}_{suffix}\n"
            )
            .unwrap();
        }
    }
}

/// The constants of mpi.h: (name, kind, value) from the probe program's output.
fn constants(cc: &str, inc: &Path, out: &Path) -> Vec<(String, String, String)> {
    let header = std::fs::read_to_string(inc.join("mpi.h")).expect("read mpi.h");
    let mut names = Vec::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for line in header.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("#define MPI_") {
            names.push(format!("MPI_{}", ident(rest)));
        } else if !t.starts_with('#') && !t.starts_with("typedef") && !t.starts_with("/*") {
            for part in t.split([',', '{', '}']) {
                let part = part.trim().trim_start_matches("enum").trim();
                if part.starts_with("MPI_") && part.contains('=') {
                    names.push(ident(part));
                }
            }
        }
    }
    let mut prog = String::from(
        "#include <stdio.h>\n#include <mpi.h>\n#define K(x) _Generic((x), int: \"int\", long: \"aint\", long long: \"aint\", void*: \"ptr\", int*: \"ptr\", char**: \"ptr\", char***: \"ptr\", MPI_Status*: \"ptr\", default: \"other\")\n",
    );
    prog.push_str("#define V(x) _Generic((x), int: (long long)(x), long: (long long)(x), long long: (long long)(x), default: 0LL)\n");
    prog.push_str("#define H(x, t) _Generic((x), t: 1, default: 0)\n");
    prog.push_str("int main(void) {\n");
    for n in &names {
        let mut handle_checks = String::new();
        for (t, _) in HANDLES {
            write!(
                handle_checks,
                " if (H({n}, {t})) {{ printf(\"{n} handle %lld\\n\", (long long)(intptr_t){n}); }} else"
            )
            .unwrap();
        }
        writeln!(
            prog,
            " {handle_checks} printf(\"{n} %s %lld\\n\", K({n}), V({n}));"
        )
        .unwrap();
    }
    prog.push_str(" return 0;\n}\n");
    let src = out.join("consts.c");
    std::fs::write(&src, prog).unwrap();
    let exe = out.join("consts");
    run(Command::new(cc)
        .arg("-std=c11")
        .arg("-w")
        .arg("-I")
        .arg(inc)
        .arg(&src)
        .arg("-o")
        .arg(&exe));
    let o = Command::new(&exe).output().expect("run consts");
    let mut v = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        let mut it = line.split(' ');
        let (n, k, val) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        if seen.insert(n.to_string()) {
            v.push((n.to_string(), k.to_string(), val.to_string()));
        }
    }
    v
}

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    if !o.status.success() {
        panic!(
            "{cmd:?} failed:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The special addresses of Fortran: (Fortran name, common block, declaration shape).
const SPECIALS: &[(&str, &str, &str)] = &[
    ("MPI_BOTTOM", "weft_f_bottom", ""),
    ("MPI_IN_PLACE", "weft_f_in_place", ""),
    ("MPI_BUFFER_AUTOMATIC", "weft_f_buffer_automatic", ""),
    (
        "MPI_STATUS_IGNORE",
        "weft_f_status_ignore",
        "(MPI_STATUS_SIZE)",
    ),
    (
        "MPI_STATUSES_IGNORE",
        "weft_f_statuses_ignore",
        "(MPI_STATUS_SIZE, 1)",
    ),
    ("MPI_ERRCODES_IGNORE", "weft_f_errcodes_ignore", "(1)"),
    ("MPI_UNWEIGHTED", "weft_f_unweighted", "(1)"),
    ("MPI_WEIGHTS_EMPTY", "weft_f_weights_empty", "(1)"),
];

/// Constants Fortran has beyond C's: (name, value).
const FORTRAN_ONLY: &[(&str, &str)] = &[
    ("MPI_STATUS_SIZE", "8"),
    ("MPI_SOURCE", "1"),
    ("MPI_TAG", "2"),
    ("MPI_ERROR", "3"),
    ("MPI_ADDRESS_KIND", "8"),
    ("MPI_OFFSET_KIND", "8"),
    ("MPI_COUNT_KIND", "8"),
    ("MPI_INTEGER_KIND", "4"),
];

/// MPI_SIZEOF (MPI-4.1 §19.1.9): the bytes of one element of `x`, of any type and rank.
const MPI_SIZEOF: &str = "  subroutine MPI_Sizeof(x, size, ierror)
    class(*), dimension(..) :: x
    integer :: size, ierror
    size = int(storage_size(x) / 8)
    ierror = MPI_SUCCESS
  end subroutine MPI_Sizeof
";

/// Declarations of the constants in free form (modules).
fn module_constants(consts: &[(String, String, String)], f08: bool) -> String {
    let mut s = String::new();
    // In mpi_f08 too: MPI_SOURCE, MPI_TAG and MPI_ERROR index INTEGER statuses (the
    // components of TYPE(MPI_Status) have the same names in a namespace of their own).
    for (n, v) in FORTRAN_ONLY {
        writeln!(s, "  integer, parameter :: {n} = {v}").unwrap();
    }
    for (n, k, v) in consts {
        match k.as_str() {
            "int" => writeln!(s, "  integer, parameter :: {n} = {v}").unwrap(),
            "aint" => writeln!(s, "  integer(kind=8), parameter :: {n} = {v}").unwrap(),
            "handle" if f08 => {
                let ty = handle_type_of(n);
                writeln!(s, "  type({ty}), parameter :: {n} = {ty}({v})").unwrap()
            }
            "handle" => writeln!(s, "  integer, parameter :: {n} = {v}").unwrap(),
            _ => {}
        }
    }
    if !f08 {
        // The predefined attribute copy and delete procedures (src/special.c).
        for k in ["COMM_", "TYPE_", "WIN_", ""] {
            writeln!(
                s,
                "  external :: MPI_{k}NULL_COPY_FN, MPI_{k}NULL_DELETE_FN, MPI_{k}DUP_FN"
            )
            .unwrap();
        }
    }
    s.push_str("  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.\n");
    s.push_str("  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.\n");
    for (n, block, shape) in SPECIALS {
        let ty = if f08 && n.starts_with("MPI_STATUS") {
            "type(MPI_Status)"
        } else {
            "integer"
        };
        let shape = if f08 && *n == "MPI_STATUS_IGNORE" {
            ""
        } else if f08 && *n == "MPI_STATUSES_IGNORE" {
            "(1)"
        } else {
            shape
        };
        writeln!(s, "  {ty} :: {n}{shape}\n  common /{block}/ {n}").unwrap();
    }
    s
}

/// The f08 type of a predefined handle constant, from its value range in the ABI.
fn handle_type_of(name: &str) -> &'static str {
    // The ABI groups handle constants by kind (mpi.h); the name tells the kind.
    const BY_PREFIX: &[(&str, &str)] = &[
        ("MPI_COMM_", "MPI_Comm"),
        ("MPI_GROUP_", "MPI_Group"),
        ("MPI_WIN_", "MPI_Win"),
        ("MPI_FILE_", "MPI_File"),
        ("MPI_SESSION_", "MPI_Session"),
        ("MPI_MESSAGE_", "MPI_Message"),
        ("MPI_INFO_", "MPI_Info"),
        ("MPI_ERRHANDLER_", "MPI_Errhandler"),
        ("MPI_ERRORS_", "MPI_Errhandler"),
        ("MPI_REQUEST_", "MPI_Request"),
    ];
    const OPS: &[&str] = &[
        "MPI_OP_NULL",
        "MPI_SUM",
        "MPI_MIN",
        "MPI_MAX",
        "MPI_PROD",
        "MPI_BAND",
        "MPI_BOR",
        "MPI_BXOR",
        "MPI_LAND",
        "MPI_LOR",
        "MPI_LXOR",
        "MPI_MINLOC",
        "MPI_MAXLOC",
        "MPI_REPLACE",
        "MPI_NO_OP",
    ];
    if OPS.contains(&name) {
        return "MPI_Op";
    }
    BY_PREFIX
        .iter()
        .find(|(p, _)| name.starts_with(p))
        .map(|(_, t)| *t)
        .unwrap_or("MPI_Datatype")
}

/// mpif.h: fixed- and free-form compatible (no line past column 72, `!` comments).
fn mpif_h(consts: &[(String, String, String)]) -> String {
    let mut s = String::from(
        "! mpif.h of weft (MPI 5.0 standard ABI, gfortran): generated by weft-mpifort's\n! build script from mpi.h. Fixed and free form. Do not edit.\n",
    );
    let mut decl = |ty: &str, n: &str, v: &str| {
        writeln!(s, "      {ty} {n}").unwrap();
        writeln!(s, "      PARAMETER ({n}={v})").unwrap();
    };
    for (n, v) in FORTRAN_ONLY {
        decl("INTEGER", n, v);
    }
    for (n, k, v) in consts {
        match k.as_str() {
            "int" | "handle" => decl("INTEGER", n, v),
            "aint" => decl("INTEGER*8", n, v),
            _ => {}
        }
    }
    s.push_str("      LOGICAL MPI_SUBARRAYS_SUPPORTED\n      PARAMETER (MPI_SUBARRAYS_SUPPORTED=.FALSE.)\n");
    s.push_str("      LOGICAL MPI_ASYNC_PROTECTS_NONBLOCKING\n      PARAMETER (MPI_ASYNC_PROTECTS_NONBLOCKING=.FALSE.)\n");
    for (n, block, shape) in SPECIALS {
        let shape = shape.replace(' ', "");
        writeln!(s, "      INTEGER {n}{shape}\n      COMMON /{block}/ {n}").unwrap();
    }
    s.push_str(
        "      EXTERNAL MPI_WTIME, MPI_WTICK, PMPI_WTIME, PMPI_WTICK\n      DOUBLE PRECISION MPI_WTIME, MPI_WTICK, PMPI_WTIME, PMPI_WTICK\n",
    );
    for k in ["COMM_", "TYPE_", "WIN_", ""] {
        writeln!(
            s,
            "      EXTERNAL MPI_{k}NULL_COPY_FN, MPI_{k}NULL_DELETE_FN\n      EXTERNAL MPI_{k}DUP_FN"
        )
        .unwrap();
    }
    // MPI_AINT_ADD and MPI_AINT_DIFF are for the program to declare, as with MPICH's mpif.h
    // (programs declare them `INTEGER(KIND=MPI_ADDRESS_KIND), EXTERNAL` themselves).
    s
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let inc = manifest.join("../weft-mpi/include");
    for f in [
        "../weft-mpi/include/mpi.h",
        "../weft-mpi/include/mpi_proto.h",
        "src/special.c",
        "src/special.h",
        "fortran/mpi_special.f90",
        "fortran/mpi_f08_special.f90",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=WEFT_FC");
    println!("cargo:rerun-if-env-changed=CC");
    let fc = std::env::var("WEFT_FC").unwrap_or_else(|_| "gfortran".into());
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut rs = String::new();

    // The procedures.
    let protos = std::fs::read_to_string(inc.join("mpi_proto.h")).expect("read mpi_proto.h");
    let mut bound = Vec::new();
    let mut unbound: BTreeMap<String, String> = BTreeMap::new();
    for line in protos.lines() {
        let Some(rest) = line.strip_prefix("int MPI_") else {
            continue;
        };
        let (name, params) = rest.split_once('(').unwrap();
        let name = format!("MPI_{name}");
        let params = params.trim_end_matches(");");
        if HANDWRITTEN.contains(&name.as_str()) {
            continue;
        }
        let reason = if name.ends_with("_c") {
            Some("large-count form (_c): only mpi_f08 has those in Fortran".to_string())
        } else if name.starts_with("MPI_T_") {
            Some("MPI_T has no Fortran binding".to_string())
        } else if name.ends_with("_toint")
            || name.starts_with("MPI_Abi_") && name.contains("booleans")
        {
            Some("C only".to_string())
        } else {
            None
        };
        if let Some(r) = reason {
            unbound.insert(name, r);
            continue;
        }
        let parsed: Vec<Option<Param>> = if params.trim() == "void" {
            Vec::new()
        } else {
            params.split(", ").map(parse_param).collect()
        };
        if parsed.iter().any(|p| p.is_none()) {
            unbound.insert(name, "variable arguments".into());
            continue;
        }
        let params: Vec<Param> = parsed.into_iter().map(Option::unwrap).collect();
        match params
            .iter()
            .map(|p| kind_of(&name, p))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(kinds) => bound.push(Proto {
                name,
                params,
                kinds,
            }),
            Err(e) => {
                unbound.insert(name, format!("no Fortran form generated ({e})"));
            }
        }
    }

    let mut c = String::from(
        "/* Generated by weft-mpifort's build script from mpi_proto.h. Do not edit. */\n#include \"special.h\"\n\n",
    );
    for p in &bound {
        c_wrapper(&mut c, p);
    }
    std::fs::write(out.join("mpifort.c"), &c).unwrap();

    // What weft info and the tests report.
    rs.push_str("/// MPI procedures with a Fortran binding (generated and written by hand), sorted.\npub static BOUND: &[&str] = &[\n");
    let mut names: Vec<String> = bound.iter().map(|p| p.name.clone()).collect();
    names.extend(HANDWRITTEN.iter().map(|s| s.to_string()));
    names.extend(
        [
            "MPI_Wtime",
            "MPI_Wtick",
            "MPI_Aint_add",
            "MPI_Aint_diff",
            "MPI_F_sync_reg",
            "MPI_Sizeof",
        ]
        .map(String::from),
    );
    names.sort();
    for n in &names {
        writeln!(rs, "    \"{n}\",").unwrap();
    }
    rs.push_str("];\n\n/// Procedures of the standard ABI without a Fortran binding, and why.\npub static UNBOUND: &[(&str, &str)] = &[\n");
    for (n, r) in &unbound {
        writeln!(rs, "    (\"{n}\", \"{}\"),", r.replace('"', "'")).unwrap();
    }
    rs.push_str("];\n\n");

    let have_fc = Command::new(&fc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_fc {
        println!("cargo:warning=weft-mpifort: no Fortran compiler ({fc}): the Fortran bindings are not built");
        writeln!(rs, "/// Why the bindings were not built, when they were not.\npub static NOT_BUILT: Option<&str> = Some(\"the Fortran compiler `{fc}` was not found when weft was built (install gfortran, or set WEFT_FC)\");\n/// The built files: (path under the install prefix, bytes).\npub static FILES: &[(&str, &[u8])] = &[];").unwrap();
        std::fs::write(out.join("generated.rs"), rs).unwrap();
        return;
    }

    // Constants and mpif.h.
    let consts = constants(&cc, &inc, &out);
    let inc_out = out.join("include");
    std::fs::create_dir_all(&inc_out).unwrap();
    std::fs::write(inc_out.join("mpif.h"), mpif_h(&consts)).unwrap();

    // Module mpi.
    let mut m = String::from(
        "! Generated by weft-mpifort's build script. Do not edit.\nmodule mpi\n  implicit none\n",
    );
    m.push_str(&module_constants(&consts, false));
    m.push_str("  interface\n");
    for p in &bound {
        interface_body(&mut m, &p.name, p);
    }
    m.push_str(&std::fs::read_to_string(manifest.join("fortran/mpi_special.f90")).unwrap());
    mpi_attr_interfaces(&mut m);
    m.push_str("  end interface\ncontains\n");
    m.push_str(MPI_SIZEOF);
    m.push_str("end module mpi\n");
    std::fs::write(out.join("mpi.f90"), &m).unwrap();

    // Module mpi_f08.
    let mut f = String::from("! Generated by weft-mpifort's build script. Do not edit.\nmodule mpi_f08\n  use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_double\n  implicit none\n  private :: c_ptr, c_int, c_double\n");
    for (t, _) in HANDLES {
        writeln!(
            f,
            "  type, bind(C) :: {t}\n    integer :: MPI_VAL\n  end type {t}"
        )
        .unwrap();
    }
    f.push_str("  type, bind(C) :: MPI_Status\n    integer :: MPI_SOURCE, MPI_TAG, MPI_ERROR\n    integer, private :: internal(5)\n  end type MPI_Status\n");
    f.push_str(&module_constants(&consts, true));
    f.push_str("  interface\n");
    for p in &bound {
        f08_interface(&mut f, p);
    }
    f.push_str("  end interface\n");
    for p in &bound {
        writeln!(
            f,
            "  interface {}\n    module procedure {}_f08\n  end interface {}",
            p.name, p.name, p.name
        )
        .unwrap();
    }
    let special = std::fs::read_to_string(manifest.join("fortran/mpi_f08_special.f90")).unwrap();
    let (decls, procs) = special
        .split_once("! contains\n")
        .expect("mpi_f08_special.f90 has a `! contains` line");
    f.push_str(decls);
    mpi_f08_attr_and_compare_decls(&mut f);
    f.push_str("contains\n");
    for p in &bound {
        f08_procedure(&mut f, p);
    }
    f.push_str(procs);
    mpi_f08_attr_and_compare_procs(&mut f);
    f.push_str(
        &MPI_SIZEOF
            .replace(
                "integer :: size, ierror",
                "integer :: size\n    integer, optional :: ierror",
            )
            .replace(
                "ierror = MPI_SUCCESS",
                "if (present(ierror)) ierror = MPI_SUCCESS",
            ),
    );
    f.push_str("end module mpi_f08\n");
    std::fs::write(out.join("mpi_f08.f90"), &f).unwrap();

    // Compile and link.
    let mut objs = Vec::new();
    for (src, obj) in [
        (out.join("mpifort.c"), out.join("mpifort.o")),
        (manifest.join("src/special.c"), out.join("special.o")),
    ] {
        run(Command::new(&cc)
            .args(["-std=gnu11", "-O2", "-fPIC", "-Wall", "-Werror", "-c"])
            .arg("-I")
            .arg(&inc)
            .arg("-I")
            .arg(manifest.join("src"))
            .arg(&src)
            .arg("-o")
            .arg(&obj));
        objs.push(obj);
    }
    for name in ["mpi", "mpi_f08"] {
        let obj = out.join(format!("{name}.o"));
        run(Command::new(&fc)
            .args(["-O1", "-fPIC", "-c"])
            .arg("-J")
            .arg(&inc_out)
            .arg(out.join(format!("{name}.f90")))
            .arg("-o")
            .arg(&obj));
        objs.push(obj);
    }
    let lib_out = out.join("lib");
    std::fs::create_dir_all(&lib_out).unwrap();
    let so = lib_out.join("libmpifort_abi.so");
    run(Command::new(&fc)
        .args(["-shared", "-Wl,-soname,libmpifort_abi.so"])
        .args(&objs)
        .arg("-o")
        .arg(&so));
    // The archive, for `mpifort -static`.
    let archive = lib_out.join("libmpifort_abi.a");
    let _ = std::fs::remove_file(&archive);
    run(Command::new("ar").arg("rcs").arg(&archive).args(&objs));

    writeln!(rs, "/// Why the bindings were not built, when they were not.\npub static NOT_BUILT: Option<&str> = None;\n/// The built files: (path under the install prefix, bytes).\npub static FILES: &[(&str, &[u8])] = &[").unwrap();
    for (rel, path) in [
        ("lib/libmpifort_abi.so", so.clone()),
        ("lib/libmpifort_abi.a", archive.clone()),
        ("include/mpif.h", inc_out.join("mpif.h")),
        ("include/mpi.mod", inc_out.join("mpi.mod")),
        ("include/mpi_f08.mod", inc_out.join("mpi_f08.mod")),
    ] {
        writeln!(
            rs,
            "    (\"{rel}\", include_bytes!(\"{}\")),",
            path.display()
        )
        .unwrap();
    }
    rs.push_str("];\n");
    std::fs::write(out.join("generated.rs"), rs).unwrap();
}
