d=$(dirname "$0"); exec tmlr-build "$d/fp8_matmul.cubin" --metadata "$d/fp8_matmul.json" --name fp8_matmul_sm90_cubin -o "${1:-$d/../../artifacts}"
