d=$(dirname "$0"); exec tmlr-build "$d/matmul.ttir" --arch 80 --name matmul_sm80_ttir -o "${1:-$d/../../artifacts}"
