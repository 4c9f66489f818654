d=$(dirname "$0"); exec tmlr-build "$d/matmul.cubin" --metadata "$d/matmul.json" --name matmul_sm90_cubin -o "${1:-$d/../../artifacts}"
