d=$(dirname "$0"); exec tmlr-build "$d/fp8_matmul.ttir" --arch 90 --name fp8_matmul_sm90_ttir -o "${1:-$d/../../artifacts}"
