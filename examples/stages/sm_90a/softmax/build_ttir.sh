d=$(dirname "$0"); exec tmlr-build "$d/softmax.ttir" --arch 90 --name softmax_sm90_ttir -o "${1:-$d/../../artifacts}"
