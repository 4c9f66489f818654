d=$(dirname "$0"); exec tmlr-build "$d/matmul.llir" --name matmul_sm80_llir -o "${1:-$d/../../artifacts}"
