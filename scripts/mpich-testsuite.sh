#!/usr/bin/env bash
# MPICH's own test suite (test/mpi of Debian bookworm's `mpich` source package) against weft:
# the C directories (coll, pt2pt, topo, comm, group, datatype, ..., rma, io) built with weft's
# mpicc and the Fortran ones (f77/*, f90/*) with its mpifort, run with weft's mpiexec.
#
#   scripts/mpich-testsuite.sh [MODE] [--jobs N] [--timeout SECS] [--max-np N] [--list FILE]
#                              [--dirs "DIR ..."]
#
# MODE
#   all     (default) build every test of the directories, run every testlist entry,
#           print PASS/FAIL/NOBUILD/SKIP per test and a summary; the passing entries are
#           written to $WORK/passing.txt, those missing from the pass list to
#           $WORK/new-passes.txt, and the failure causes to $WORK/causes.txt.
#   check   build and run only the entries of the pass list (--list, default
#           itest/mpich/pass-list.txt); exits 1 when any of them fails (a regression).
#   setup   only fetch the sources (deb-src line + `apt-get source mpich`).
#
# A test passes when its job exits 0 and prints " No Errors" (MPICH's MTest convention; a few
# tests print "No errors" themselves, which MPICH's runtests accepts too).
# Entries whose testlist says resultTest=TestStatus or TestErrFatal pass when the job exits
# non-zero (not by timeout), as in MPICH's runtests.
# --dirs names the test/mpi directories to build and run (default: every directory the pass
# list needs; any directory of the suite works, e.g. "threads/mpi_t" or "f77/spawn" (threads/*
# link MTest's thread library, util/mtest_thread.c); a Fortran
# directory needs gfortran, for `weft install`'s mpifort). Process counts come from each directory's
# testlist, capped at 4 (weft's CI has 2 cores;
# --max-np raises the cap: tests written for, say, 10 ranks may refuse 4);
# entries that differ only by MPICH-internal environment (env=MPIR_CVAR_...) are run once.
#
# Environment
#   WEFT_MPICH_SRC    source cache (default /var/cache/weft/mpich-src; reused when present)
#   WEFT_MPICH_WORK   build/run directory (default $CARGO_TARGET_DIR/mpich-suite)
#   CARGO_TARGET_DIR  where weft-mpi and weft-cli are built (default <repo>/target)
#   WEFT_MPICH_NO_CARGO=1  do not run cargo build (the artifacts must already be there)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
src_cache=${WEFT_MPICH_SRC:-/var/cache/weft/mpich-src}
target=${CARGO_TARGET_DIR:-$repo/target}
work=${WEFT_MPICH_WORK:-$target/mpich-suite}
dirs="coll pt2pt topo comm group datatype attr errhan info init mpi_t rma io spawn threads/pt2pt threads/comm threads/init threads/rma threads/part f77/attr f77/coll f77/datatype f77/pt2pt f77/info f77/init f77/comm f77/ext f77/topo f77/profile f77/io f77/rma f77/spawn f90/attr f90/coll f90/comm f90/ext f90/info f90/init f90/misc f90/pt2pt f90/datatype f90/f90types f90/timer f90/topo f90/profile f90/io f90/rma f90/spawn"
max_np=4
# Entries that need more memory than this (testlist mem=, in GB) are skipped: CI machines are small.
max_mem_gb=4

mode=all
jobs=2
timeout_s=30
list="$repo/itest/mpich/pass-list.txt"

die() {
  echo "mpich-testsuite: $*" >&2
  exit 2
}

# ---------------------------------------------------------------------------------------------
# One test run (the parallel pool calls the script itself in this mode).
#   __run_one "DIR/NAME NP [ARGS...]"
# Writes $work/results/<key>.res: "PASS|FAIL|NOBUILD <id> [reason]".
run_one() {
  local id=$1
  local prog np args key log res rc=0
  read -r prog np args <<<"$id"
  key=$(printf '%s' "$id" | tr -c 'A-Za-z0-9_.-' '_')
  log="$work/logs/$key.log"
  res="$work/results/$key.res"
  if [ ! -x "$work/build/$prog" ]; then
    echo "NOBUILD $id" >"$res"
    return 0
  fi
  # Each entry runs in a directory of its own: the io tests write files of fixed names
  # ("testfile") into their working directory, and two at once would share them.
  local rundir="$work/runs/$key"
  rm -rf "$rundir" && mkdir -p "$rundir"
  # The spawn tests start programs by relative names ("./spawn1"), as MPICH's runtests runs
  # them from their own folder: their folder's programs are linked into the run directory.
  case $prog in
    spawn/* | */spawn/*)
      for f in "$work/build/$(dirname "$prog")"/*; do
        if [ -f "$f" ] && [ -x "$f" ]; then ln -s "$f" "$rundir/"; fi
      done
      ;;
  esac
  # mpiexec's --timeout makes weft run end the job and clean up; the outer timeout is only a
  # backstop in case the launcher itself hangs.
  (cd "$rundir" &&
    # shellcheck disable=SC2086 # args are separate words on purpose
    # The script's own WEFT_* settings are not weft runtime variables (weft run warns about
    # unknown WEFT_* names), so they do not reach the job.
    env -u WEFT_MPICH_SRC -u WEFT_MPICH_WORK -u WEFT_MPICH_NO_CARGO -u WEFT_SKIP_MPICH_SUITE \
      timeout -k 10 $((timeout_s + 30)) "$work/prefix/bin/mpiexec" -n "$np" --timeout "$timeout_s" \
      "$work/build/$prog" $args) >"$log" 2>&1 </dev/null || rc=$?
  rm -rf "$rundir"
  # Entries marked resultTest=TestStatus or TestErrFatal in their testlist pass when the
  # job exits non-zero (MPICH's runtests: the test checks that an exit status or a fatal
  # error reaches mpiexec); a timeout does not count.
  local tdir expect_fail=0
  tdir=$(find "$src_cache" -maxdepth 4 -type d -path "*/test/mpi/$(dirname "$prog")" 2>/dev/null | sort | tail -n 1)
  if [ -n "$tdir" ] && { cat "$tdir/testlist.in" "$tdir/testlist" 2>/dev/null || true; } |
    grep -Eq "^$(basename "$prog")[[:space:]].*resultTest=Test(Status|ErrFatal)"; then
    expect_fail=1
  fi
  if [ "$expect_fail" -eq 1 ]; then
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && ! grep -qi 'timed out' "$log"; then
      echo "PASS $id" >"$res"
    else
      echo "FAIL $id (exit $rc; its testlist expects a non-zero exit)" >"$res"
    fi
    return 0
  fi
  if [ "$rc" -eq 0 ] && grep -q '^ *No [Ee]rrors' "$log"; then
    echo "PASS $id" >"$res"
  else
    local why
    if [ "$rc" -eq 0 ]; then
      why="exit 0 without \"No Errors\""
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || grep -qi 'timed out\|timeout' "$log"; then
      why="timeout or killed (exit $rc)"
    else
      why="exit $rc"
    fi
    echo "FAIL $id ($why)" >"$res"
  fi
}

if [ "${1:-}" = __run_one ]; then
  work=$2
  timeout_s=$3
  run_one "$4"
  exit 0
fi

while [ $# -gt 0 ]; do
  case "$1" in
    all | check | setup) mode=$1 ;;
    --all) mode=all ;;
    --jobs | -j) jobs=${2:?--jobs needs a number}; shift ;;
    --max-np) max_np=${2:?--max-np needs a number}; shift ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift ;;
    --list) list=${2:?--list needs a file}; shift ;;
    --dirs) dirs=${2:?--dirs needs a list of directories}; shift ;;
    -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (modes: all, check, setup; options: --jobs N, --timeout SECS, --max-np N, --list FILE, --dirs LIST)" ;;
  esac
  shift
done
case "$jobs" in '' | *[!0-9]* | 0) die "--jobs must be a positive integer, got '$jobs'" ;; esac
case "$max_np" in '' | *[!0-9]* | 0) die "--max-np must be a positive integer, got '$max_np'" ;; esac
case "$timeout_s" in '' | *[!0-9]* | 0) die "--timeout must be a positive integer, got '$timeout_s'" ;; esac

# ---------------------------------------------------------------------------------------------
# Sources: a deb-src line for bookworm next to the image's deb822 sources, then apt-get source.
fetch_sources() {
  local have
  have=$(find "$src_cache" -maxdepth 1 -type d -name 'mpich-*' 2>/dev/null | sort | tail -n 1 || true)
  if [ -n "$have" ] && [ -d "$have/test/mpi/coll" ]; then
    mpich_src=$have
    return 0
  fi
  command -v apt-get >/dev/null || die "apt-get not found: MPICH's test suite comes from Debian's mpich source package (set WEFT_SKIP_MPICH_SUITE=1 to skip)"
  mkdir -p "$src_cache" || die "cannot create the source cache $src_cache (set WEFT_MPICH_SRC)"
  # Two callers (the cargo tests run in parallel) must not unpack into the same cache at once.
  exec 9>"$src_cache/.lock"
  flock 9
  have=$(find "$src_cache" -maxdepth 1 -type d -name 'mpich-*' | sort | tail -n 1)
  if [ -n "$have" ] && [ -d "$have/test/mpi/coll" ]; then
    mpich_src=$have
    exec 9>&-
    return 0
  fi
  if ! command -v dpkg-source >/dev/null; then
    # apt-get source needs dpkg-source (package dpkg-dev) to unpack what it downloads.
    [ "$(id -u)" -eq 0 ] || die "dpkg-source not found and not root: apt-get install dpkg-dev first"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev xz-utils >/dev/null; } >&2 ||
      die "apt-get install dpkg-dev failed (network or apt unavailable) (set WEFT_SKIP_MPICH_SUITE=1 to skip)"
  fi
  local list_file=/etc/apt/sources.list.d/weft-deb-src.sources
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    [ -w /etc/apt/sources.list.d ] || die "cannot write $list_file (need root to add the deb-src line)"
    cat >"$list_file" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  if ! apt-cache showsrc mpich >/dev/null 2>&1 || [ -z "$(apt-cache showsrc mpich 2>/dev/null)" ]; then
    apt-get update -qq >&2 || die "apt-get update failed (network or apt unavailable): cannot fetch the mpich source package (set WEFT_SKIP_MPICH_SUITE=1 to skip)"
  fi
  (cd "$src_cache" && apt-get source -qq mpich >&2) ||
    die "apt-get source mpich failed (network or apt unavailable) (set WEFT_SKIP_MPICH_SUITE=1 to skip)"
  have=$(find "$src_cache" -maxdepth 1 -type d -name 'mpich-*' | sort | tail -n 1)
  [ -n "$have" ] && [ -d "$have/test/mpi/coll" ] || die "apt-get source mpich produced no test/mpi/coll under $src_cache"
  mpich_src=$have
  exec 9>&-
}

# ---------------------------------------------------------------------------------------------
# weft: the library, the weft binary, and an install prefix holding mpicc/mpiexec.
# The Fortran directories need the whole installation (mpifort, mpif.h, the modules), which
# `weft install` writes; it also wants libshmem.so beside the weft binary.
build_weft() {
  local fortran=0 d
  for d in $dirs; do case "$d" in f77/* | f90/*) fortran=1 ;; esac; done
  if [ "${WEFT_MPICH_NO_CARGO:-0}" != 1 ]; then
    local crates=(-p weft-mpi -p weft-cli)
    [ "$fortran" = 1 ] && crates+=(-p weft-shmem)
    (cd "$repo" && CARGO_TARGET_DIR="$target" cargo build -q "${crates[@]}") ||
      die "cargo build ${crates[*]} failed"
  fi
  [ -x "$target/debug/weft" ] || die "$target/debug/weft not built (cargo build -p weft-cli)"
  if [ "$fortran" = 1 ]; then
    "$target/debug/weft" install --prefix "$work/prefix" >/dev/null ||
      die "weft install --prefix $work/prefix failed"
  else
    PROFILE=debug sh "$repo/crates/weft-mpi/install.sh" "$work/prefix" "$target" >/dev/null
  fi
}

# The configure-generated headers the tests include. Values come from the compiler's own
# predefined macros and from weft's mpi.h, not from guesses: this replaces MPICH's configure,
# which takes minutes and probes for an MPICH build we do not have.
write_conf_headers() {
  mkdir -p "$work/build/include"
  cat >"$work/build/include/mpitestconf.h.tmp" <<'EOF'
/* mpitestconf.h for MPICH's test suite built against weft (written by scripts/mpich-testsuite.sh) */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define STDC_HEADERS 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDARG_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_PTHREAD_H 1
#define HAVE_DLFCN_H 1
#define HAVE_STRDUP 1
#define HAVE_USLEEP 1
#define HAVE_GETRUSAGE 1
#define HAVE__BOOL 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
/* The MPI 5.0 ABI (weft's mpi.h) has MPI_INTEGER16. */
#define HAVE_MPI_INTEGER16 1
/* weft has one-sided windows and MPI-IO (MTestGetWin and friends in util/mtest.c). */
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_IO 1
/* gfortran's external names: lower case with one trailing underscore. */
#define F77_NAME_LOWER_USCORE 1
#define SIZEOF_SHORT __SIZEOF_SHORT__
#define SIZEOF_INT __SIZEOF_INT__
#define SIZEOF_LONG __SIZEOF_LONG__
#define SIZEOF_LONG_LONG __SIZEOF_LONG_LONG__
#define SIZEOF_VOID_P __SIZEOF_POINTER__
/* MPI_Offset is int64_t in the MPI 5.0 standard ABI (weft's mpi.h). */
#define SIZEOF_MPI_OFFSET 8
#define POINTERINT_t __INTPTR_TYPE__
/* weft is not MPICH: the tests must stay within the standard (no MPIX_, no MPICH extensions
   such as bitwise ops on MPI_CHAR). This is what MPICH's configure --enable-strict sets. */
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define PACKAGE "mpich-testsuite"
#define PACKAGE_NAME "mpich-testsuite"
#define PACKAGE_VERSION "weft"
#define VERSION "weft"
#endif
EOF
  mv "$work/build/include/mpitestconf.h.tmp" "$work/build/include/mpitestconf.h"
  # dtpools_internal.h includes "../dtpoolsconf.h": found through -I$work/build/dtpools/include.
  mkdir -p "$work/build/dtpools/include"
  cat >"$work/build/dtpools/dtpoolsconf.h" <<'EOF'
/* dtpoolsconf.h for MPICH's DTPools built against weft (written by scripts/mpich-testsuite.sh) */
#define STDC_HEADERS 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_LIMITS_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_MEMSET 1
#define HAVE_STRDUP 1
EOF
}

# The headers MPICH's configure writes into the Fortran test directories from their *.h.in:
# declarations of address- and offset-sized integers, whose kinds come from the installed
# mpif.h.
write_fortran_headers() {
  local d=$1 t=$mpich_src/test/mpi kind_addr kind_off f
  kind_addr=$(sed -n 's/.*MPI_ADDRESS_KIND *= *\([0-9]*\).*/\1/p' "$work/prefix/include/mpif.h" | head -n 1)
  kind_off=$(sed -n 's/.*MPI_OFFSET_KIND *= *\([0-9]*\).*/\1/p' "$work/prefix/include/mpif.h" | head -n 1)
  [ -n "$kind_addr" ] && [ -n "$kind_off" ] ||
    die "$work/prefix/include/mpif.h names no MPI_ADDRESS_KIND/MPI_OFFSET_KIND (weft install wrote no Fortran files: is gfortran installed?)"
  # Every f77 directory's headers (their names differ; f77/rma includes f77/attr's, an f90
  # directory those of its f77 twin) plus the directory's own.
  mkdir -p "$work/build/$d"
  for f in "$t"/f77/*/*.h.in "$t/$d"/*.h.in; do
    [ -f "$f" ] || continue
    sed -e "s/@F77_MPI_ADDRESS@/integer*$kind_addr/g" -e "s/@F77_MPI_OFFSET@/integer*$kind_off/g" \
      "$f" >"$work/build/$d/$(basename "${f%.in}")"
  done
}

# A Makefile with one rule per test program, read from each directory's Makefile.am
# (noinst_PROGRAMS, NAME_SOURCES, NAME_CPPFLAGS, NAME_LDADD). Each program's compiler output
# goes to NAME.build.log so build failures can be classified.
write_makefile() {
  local t=$mpich_src/test/mpi
  local mk=$work/build/Makefile
  {
    echo "# generated by scripts/mpich-testsuite.sh from $t/*/Makefile.am"
    echo "T := $t"
    echo "MPICC := $work/prefix/bin/mpicc"
    # DTPools calls MPI_Type_hvector/MPI_Type_hindexed, removed from the standard in MPI-3.0
    # (absent from the MPI 5.0 ABI); their replacements have the same C arguments and meaning.
    echo "CFLAGS := -O1 -g -w -I$work/build/include -I\$(T)/include -I\$(T)/dtpools/include" \
      "-DMPI_Type_hvector=MPI_Type_create_hvector -DMPI_Type_hindexed=MPI_Type_create_hindexed"
    # One group: mtest.o calls the thread hooks of mtest_single.o, and dtpools and mtest call each other.
    echo "LIBS := -Wl,--start-group $work/build/util/libmtest.a $work/build/dtpools/libdtpools.a -Wl,--end-group"
    echo ".SUFFIXES:"
    echo ".DELETE_ON_ERROR:"
    echo "UTIL_OBJ := util/mtest.o util/mtest_common.o util/mtest_single.o util/dtypes.o"
    echo "DTP_OBJ := \$(patsubst %.c,dtpools/%.o,\$(notdir \$(wildcard \$(T)/dtpools/src/*.c)))"
    echo "util/%.o: \$(T)/util/%.c Makefile"
    printf '\t@mkdir -p util && $(MPICC) $(CFLAGS) -c $< -o $@\n'
    echo "dtpools/%.o: \$(T)/dtpools/src/%.c Makefile"
    printf '\t@mkdir -p dtpools && $(MPICC) $(CFLAGS) -I$(T)/dtpools/src -I'"$work"'/build/dtpools/include -c $< -o $@\n'
    # libmtest + libmtest_single + libdtypes of util/Makefile.am (single-threaded flavour).
    echo "util/libmtest.a: \$(UTIL_OBJ) Makefile"
    printf '\t@rm -f $@ && ar rcs $@ $(filter %%.o,$^)\n'
    echo "dtpools/libdtpools.a: \$(DTP_OBJ) Makefile"
    printf '\t@rm -f $@ && ar rcs $@ $(filter %%.o,$^)\n'
    echo "LIBDEPS := util/libmtest.a dtpools/libdtpools.a"
    # The threads/* directories link libmtest_thread of util/Makefile.am instead: the same
    # with util/mtest_thread.c (MTest_Start_thread, locks, barriers on POSIX threads).
    echo "UTIL_THREAD_OBJ := util/mtest.o util/mtest_common.o util/mtest_thread.o util/dtypes.o"
    echo "util/libmtest_thread.a: \$(UTIL_THREAD_OBJ) Makefile"
    printf '\t@rm -f $@ && ar rcs $@ $(filter %%.o,$^)\n'
    echo "LIBS_THREAD := -Wl,--start-group $work/build/util/libmtest_thread.a $work/build/dtpools/libdtpools.a -Wl,--end-group -pthread"
    echo "LIBDEPS_THREAD := util/libmtest_thread.a dtpools/libdtpools.a"
    # The Fortran directories (f77/*, f90/*): compiled with weft's mpifort, linked with the
    # Fortran MTest library of util/Makefile.am (mtest_f77.f or mtest_f90.f90) before the C
    # one. MPICH's tests pass buffers of different types to the same procedure through
    # mpif.h, which gfortran 10+ rejects unless told to allow it.
    echo "MPIFORT := $work/prefix/bin/mpifort"
    echo "FFLAGS := -O1 -g -w -fallow-argument-mismatch"
    echo "util/%.o: \$(T)/util/%.f Makefile"
    printf '\t@mkdir -p util && $(MPIFORT) $(FFLAGS) -c $< -o $@\n'
    echo "util/%.o: \$(T)/util/%.f90 Makefile"
    printf '\t@mkdir -p util && $(MPIFORT) $(FFLAGS) -c $< -o $@\n'
    echo "util/libmtest_%.a: util/mtest_%.o Makefile"
    printf '\t@rm -f $@ && ar rcs $@ $(filter %%.o,$^)\n'
    local d lang
    for d in $dirs; do
      case "$d" in
        f77/*) lang=f77 ;;
        f90/*) lang=f90 ;;
        *) lang=c ;;
      esac
      [ "$lang" = c ] || write_fortran_headers "$d"
      awk -v dir="$d" -v lang="$lang" -v gen="$work/build/$d" -v progfile="$work/build/programs.${d//\//_}" '
        # Join continuation lines, then read the variables automake would.
        { line = line $0 }
        /\\$/ { sub(/\\$/, "", line); next }
        {
          l = line; line = ""
          if (l ~ /^[ \t]*#/ || l ~ /^[ \t]*(if|else|endif)/) next
          if (match(l, /^[ \t]*noinst_PROGRAMS[ \t]*\+?=/)) {
            n = split(substr(l, RLENGTH + 1), w, /[ \t]+/)
            for (i = 1; i <= n; i++) if (w[i] != "" && !(w[i] in seen)) { seen[w[i]] = 1; progs[++np] = w[i] }
            next
          }
          if (match(l, /^[ \t]*[A-Za-z0-9_]+_(SOURCES|CPPFLAGS|LDADD)[ \t]*=/)) {
            split(l, kv, "=")
            key = kv[1]; gsub(/[ \t]/, "", key); sub(/^nodist_/, "", key)
            val = substr(l, index(l, "=") + 1)
            gsub(/\$\((AM_CPPFLAGS|LDADD)\)/, "", val)
            # configure-time libraries (@socklib@, @nslib@): none on Linux
            gsub(/@[a-z_]+@/, "", val)
            vars[key] = val
          }
        }
        END {
          ext = (lang == "f77") ? ".f" : (lang == "f90") ? ".f90" : ".c"
          for (i = 1; i <= np; i++) {
            p = progs[i]
            srcs = (p "_SOURCES" in vars) ? vars[p "_SOURCES"] : p ext
            s = ""
            n = split(srcs, w, /[ \t]+/)
            for (j = 1; j <= n; j++) if (w[j] != "") s = s " $(T)/" dir "/" w[j]
            all = all " " dir "/" p
            print dir "/" p > progfile
            if (lang == "c") {
              th = (dir ~ /^threads\//) ? "_THREAD" : ""
              printf "%s/%s:%s $(LIBDEPS%s)\n", dir, p, s, th
              printf "\t@mkdir -p %s && $(MPICC) $(CFLAGS) %s -o $@%s $(LIBS%s) %s -lm >$@.build.log 2>&1 || { echo \"build failed: $@ (see $@.build.log)\" >&2; exit 1; }\n", dir, vars[p "_CPPFLAGS"], s, th, vars[p "_LDADD"]
            } else {
              # Built in its own directory: the sources include the headers generated
              # there (write_fortran_headers) and their own directory s.
              printf "%s/%s:%s util/libmtest_%s.a $(LIBDEPS)\n", dir, p, s, lang
              printf "\t@mkdir -p %s && cd %s && $(MPIFORT) $(FFLAGS) $(CFLAGS) -I%s -I$(T)/%s -o %s%s $(CURDIR)/util/libmtest_%s.a $(LIBS) -lm >%s.build.log 2>&1 || { echo \"build failed: $@ (see $@.build.log)\" >&2; exit 1; }\n", dir, dir, gen, dir, p, s, lang, p
            }
          }
          printf "ALL_PROGRAMS +=%s\n", all
        }' "$t/$d/Makefile.am"
    done
    echo "all: \$(ALL_PROGRAMS)"
    echo ".DEFAULT_GOAL := all"
  } >"$mk.tmp"
  # Replaced only when it changed: the libraries depend on it, so a new rule set rebuilds
  # everything while an unchanged one keeps the programs already built.
  if cmp -s "$mk.tmp" "$mk"; then rm -f "$mk.tmp"; else mv "$mk.tmp" "$mk"; fi
}

# The testlist entries of a directory (its testlist.in, or testlist), one per line:
# "DIR/NAME NP [ARGS...]".
# np is capped at $max_np; env= (MPICH CVARs), strict=, timeLimit= and xfail= are dropped;
# entries needing more than $max_mem_gb GB and autoconf-disabled (@name@) lines are listed
# as SKIP on stderr. The tests in $divisor_of_10 call MPI_Abort unless the process count
# divides 10 ("Number of processors must divide 10"), so the cap does not take them below
# 5 ranks.
divisor_of_10="coll/coll2 coll/coll6 coll/coll7 coll/gatherv coll/nbcoll2 coll/p_gatherv"
testlist_entries() {
  local d=$1
  # testlist.in when the directory has one (configure makes testlist of it), else testlist
  # (topo has no configure-time entries).
  local tl=$mpich_src/test/mpi/$d/testlist.in
  [ -f "$tl" ] || tl=$mpich_src/test/mpi/$d/testlist
  awk -v dir="$d" -v cap="$max_np" -v maxmem="$max_mem_gb" -v div10="$divisor_of_10" '
    BEGIN { n = split(div10, w, " "); for (i = 1; i <= n; i++) needs5[w[i]] = 1 }
    /^[ \t]*(#|$)/ { next }
    # weft has a name service (MPI_Publish_name), for which the MPICH configure enables these
    { sub(/^@namepub_tests@/, "") }
    /^@[a-z_]+@/ { print "SKIP " dir "/" substr($1, index(substr($1, 2), "@") + 2) " (disabled by MPICH configure: " $0 ")" > "/dev/stderr"; next }
    {
      c = cap; if ((dir "/" $1) in needs5 && c < 5) c = 5
      np = $2 + 0; if (np > c) np = c; if (np < 1) np = 1
      args = ""; mem = 0
      for (i = 3; i <= NF; i++) {
        if ($i ~ /^arg=/) args = args " " substr($i, 5)
        else if ($i ~ /^mem=/) mem = substr($i, 5) + 0
      }
      id = dir "/" $1 " " np args
      if (mem > maxmem) { print "SKIP " id " (needs " mem " GB)" > "/dev/stderr"; next }
      if (!(id in seen)) { seen[id] = 1; print id }
    }' "$tl"
}

# Runs the given entries (stdin) $jobs at a time; prints one result line per entry, in order.
run_entries() {
  local entries
  entries=$(cat)
  rm -rf "$work/results" "$work/logs"
  mkdir -p "$work/results" "$work/logs"
  [ -n "$entries" ] || return 0
  printf '%s\n' "$entries" | xargs -d '\n' -P "$jobs" -n 1 "$0" __run_one "$work" "$timeout_s"
  local id key
  while IFS= read -r id; do
    key=$(printf '%s' "$id" | tr -c 'A-Za-z0-9_.-' '_')
    if [ -f "$work/results/$key.res" ]; then
      cat "$work/results/$key.res"
    else
      echo "FAIL $id (no result: the runner died)"
    fi
  done <<<"$entries"
}

# The most common failure causes: link errors (functions weft's library does not export),
# compile errors, and the MPI error messages the failing jobs printed.
write_causes() {
  local out=$work/causes.txt
  {
    echo "== functions missing at link time (tests affected)"
    grep -ho "undefined reference to \`[A-Za-z_0-9]*'" "$work"/build/*/*.build.log "$work"/build/*/*/*.build.log 2>/dev/null |
      sort | uniq -c | sort -rn || true
    echo "== compile errors (first error of each failed build)"
    for f in "$work"/build/*/*.build.log "$work"/build/*/*/*.build.log; do
      [ -e "$f" ] || continue
      [ -x "${f%.build.log}" ] && continue
      grep -m1 'error:' "$f" | sed "s|^|$(basename "${f%.build.log}"): |" || true
    done
    echo "== messages of failing runs (first line mentioning an error, per test)"
    for r in "$work"/results/*.res; do
      [ -e "$r" ] || continue
      grep -q '^FAIL' "$r" || continue
      local log
      log="$work/logs/$(basename "${r%.res}").log"
      printf '%s: %s\n' "$(cut -d' ' -f2- "$r")" \
        "$(grep -m1 -i 'error\|unsupported\|not implemented\|abort\|signal\|fault\|timed out' "$log" 2>/dev/null | cut -c1-200)"
    done
  } >"$out"
}

fetch_sources
[ "$mode" = setup ] && { echo "mpich sources in $mpich_src"; exit 0; }
if [ "$mode" = check ]; then
  [ -f "$list" ] || die "pass list $list not found"
  entries=$(grep -v '^[[:space:]]*\(#\|$\)' "$list" || true)
  [ -n "$entries" ] || die "pass list $list is empty"
  # Every pass-list entry must still be a testlist entry: a typo must not pass silently.
  known=$(for d in $dirs; do testlist_entries "$d" 2>/dev/null; done)
  while IFS= read -r id; do
    grep -qxF "$id" <<<"$known" || die "pass list entry '$id' is not a testlist entry of $mpich_src"
  done <<<"$entries"
fi
mkdir -p "$work/build"
build_weft
write_conf_headers
write_makefile

case "$mode" in
  all)
    entries=$(for d in $dirs; do testlist_entries "$d"; done)
    make -C "$work/build" -k -j "$jobs" all >/dev/null 2>"$work/build-errors.txt" || true
    programs=$(for d in $dirs; do cat "$work/build/programs.${d//\//_}"; done)
    total=0
    built=0
    for p in $programs; do
      total=$((total + 1))
      [ -x "$work/build/$p" ] && built=$((built + 1))
    done
    results=$(printf '%s\n' "$entries" | run_entries)
    printf '%s\n' "$results"
    printf '%s\n' "$results" | sed -n 's/^PASS //p' >"$work/passing.txt"
    # Passing entries the checked-in list lacks: append them to it (the list only grows).
    if [ -f "$list" ]; then
      grep -vxF -f <(grep -v '^[[:space:]]*\(#\|$\)' "$list") "$work/passing.txt" >"$work/new-passes.txt" || true
    else
      cp "$work/passing.txt" "$work/new-passes.txt"
    fi
    write_causes
    echo "== summary: $built of $total programs built;" \
      "$(grep -c '^PASS' <<<"$results") of $(grep -c . <<<"$results") testlist entries pass" \
      "($(grep -c '^FAIL' <<<"$results") fail, $(grep -c '^NOBUILD' <<<"$results") not built);" \
      "passing entries in $work/passing.txt, failure causes in $work/causes.txt"
    echo "== $(grep -c . "$work/new-passes.txt" || true) passing entries are not on $list yet" \
      "(listed in $work/new-passes.txt; append them to the list)"
    ;;
  check)
    progs=$(cut -d' ' -f1 <<<"$entries" | sort -u)
    # shellcheck disable=SC2086 # one make target per program
    make -C "$work/build" -k -j "$jobs" $progs >/dev/null 2>"$work/build-errors.txt" || true
    results=$(printf '%s\n' "$entries" | run_entries)
    printf '%s\n' "$results"
    failed=$(grep -v '^PASS' <<<"$results" || true)
    if [ -n "$failed" ]; then
      echo "== REGRESSION: $(grep -c . <<<"$failed") of $(grep -c . <<<"$entries") pass-list entries fail:"
      while IFS= read -r line; do
        id=$(cut -d' ' -f2- <<<"$line" | sed 's/ (.*$//')
        key=$(printf '%s' "$id" | tr -c 'A-Za-z0-9_.-' '_')
        echo "---- $line"
        tail -n 20 "$work/logs/$key.log" 2>/dev/null || cat "$work/build/$(cut -d' ' -f1 <<<"$id").build.log" 2>/dev/null || true
      done <<<"$failed"
      exit 1
    fi
    echo "== all $(grep -c . <<<"$entries") pass-list entries pass"
    ;;
esac
