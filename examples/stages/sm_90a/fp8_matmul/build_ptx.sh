d=$(dirname "$0"); exec tmlr-build "$d/fp8_matmul.ptx" --name fp8_matmul_sm90_ptx -o "${1:-$d/../../artifacts}"
