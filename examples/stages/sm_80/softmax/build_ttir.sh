d=$(dirname "$0"); exec tmlr-build "$d/softmax.ttir" --arch 80 --name softmax_sm80_ttir -o "${1:-$d/../../artifacts}"
