d=$(dirname "$0"); exec tmlr-build "$d/matmul.ttir" --arch 90 --name matmul_sm90_ttir -o "${1:-$d/../../artifacts}"
