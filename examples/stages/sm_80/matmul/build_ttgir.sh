d=$(dirname "$0"); exec tmlr-build "$d/matmul.ttgir" --name matmul_sm80_ttgir -o "${1:-$d/../../artifacts}"
