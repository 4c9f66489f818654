d=$(dirname "$0"); exec tmlr-build "$d/fp8_matmul.ttgir" --name fp8_matmul_sm90_ttgir -o "${1:-$d/../../artifacts}"
