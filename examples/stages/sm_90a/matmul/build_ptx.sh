d=$(dirname "$0"); exec tmlr-build "$d/matmul.ptx" --name matmul_sm90_ptx -o "${1:-$d/../../artifacts}"
