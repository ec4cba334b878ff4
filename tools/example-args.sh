# Sourced by the GPU-machine scripts (gpu-check.sh, soak.sh): the inputs each
# shipped example needs for `crec run --check`, as in the README.
# crec_example_args NAME: prints them, one per line.
crec_example_args() {
  case "$1" in
    chain|branches) printf '%s\n' --input x=iota ;;
    image) printf '%s\n' --input x=random:1 --input w=fill:1 ;;
    switch) printf '%s\n' --input x=random:1 --input mode=fill:2 ;;
    dynamic) printf '%s\n' --size x=1000,4096,100000 --input x=iota ;;
    jacobi) printf '%s\n' --input b=fill:1 --scalar tol=1e-4 ;;
  esac
}
