d=$(dirname "$0"); exec tmlr-build "$d/fp8_matmul.llir" --name fp8_matmul_sm90_llir -o "${1:-$d/../../artifacts}"
