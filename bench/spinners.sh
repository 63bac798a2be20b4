# Busy processes beside a benchmark (sourced by bench/compare.sh and bench/wait_load.sh, not
# run): `start_spinners N` starts N shell loops that spin forever (not MPI: other work that
# competes for the cores), `stop_spinners` kills the ones started so far. `pause_spinners`
# and `resume_spinners` stop them (SIGSTOP) and let them go on (SIGCONT), for a measurement
# of the host that must not see them (bench/compare.sh's host speed probe). Sourcing it sets
# traps that stop them when the script exits or is interrupted, so none outlives it.
spinner_pids=""
start_spinners() { # $1 how many
  _s=0
  while [ "$_s" -lt "$1" ]; do
    sh -c 'while :; do :; done' &
    spinner_pids="$spinner_pids $!"
    _s=$((_s + 1))
  done
}
stop_spinners() {
  # shellcheck disable=SC2086 # a list of pids
  [ -z "$spinner_pids" ] || kill $spinner_pids 2>/dev/null || true
  spinner_pids=""
}
pause_spinners() {
  # shellcheck disable=SC2086 # a list of pids
  [ -z "$spinner_pids" ] || kill -STOP $spinner_pids 2>/dev/null || true
}
resume_spinners() {
  # shellcheck disable=SC2086 # a list of pids
  [ -z "$spinner_pids" ] || kill -CONT $spinner_pids 2>/dev/null || true
}
trap stop_spinners EXIT
trap 'stop_spinners; exit 130' INT TERM
