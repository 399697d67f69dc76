# bash completion for fastcat(1)                            -*- shell-script -*-
#
# Installed as $(datadir)/bash-completion/completions/fastcat, where
# bash-completion loads it on demand. Keep the option and value lists in step
# with options_table in src/options-table.c: tests/completion.bats checks them
# against "fastcat --help-all" and fastcat's own lists of values, both ways.

_fastcat()
{
    local cur prev words cword split
    _init_completion -s -n : || return

    local transports='tcp udp unix unix-dgram unix-seqpacket'

    case $prev in
        -h | --help | --help-all | -V | --version)
            return
            ;;
        --transport)
            COMPREPLY=($(compgen -W "$transports" -- "$cur"))
            return
            ;;
        --copy)
            COMPREPLY=($(compgen -W 'auto rw splice' -- "$cur"))
            return
            ;;
        --congestion)
            # the algorithms the kernel has now (Linux); elsewhere nothing to offer
            local algos=
            [[ -r /proc/sys/net/ipv4/tcp_available_congestion_control ]] &&
                algos=$(</proc/sys/net/ipv4/tcp_available_congestion_control)
            COMPREPLY=($(compgen -W "$algos" -- "$cur"))
            return
            ;;
        --report)
            # optional argument: only as --report=human|json
            if $split; then
                COMPREPLY=($(compgen -W 'human json' -- "$cur"))
                return
            fi
            ;;
        --bench-transports)
            # comma-separated list: complete the element after the last comma
            local done= last=$cur
            if [[ $cur == *,* ]]; then
                done=${cur%,*},
                last=${cur##*,}
            fi
            COMPREPLY=($(compgen -P "$done" -W "pipe memcpy $transports" -- "$last"))
            compopt -o nospace 2>/dev/null
            return
            ;;
        -B | --chunk-size | --read-size | --write-size | -O | --sndbuf | -I | --rcvbuf | \
            --dgram-size | --bench-sizes | --rcvlowat)
            # a SIZE (k/K/KiB, m/M/MiB, g/G/GiB suffixes): never a file
            return
            ;;
        -P | --parallel)
            COMPREPLY=($(compgen -W 'auto 2 4 8 16' -- "$cur"))
            return
            ;;
        --mcast-if)
            COMPREPLY=($(compgen -W "$(ls /sys/class/net 2>/dev/null)" -- "$cur"))
            return
            ;;
        -w | --timeout | -q | --bench-time | --unix-mode | --allow | --deny | \
            --interval | --size | --rate-limit | --retry | --retry-wait | --replay-buffer | \
            --sync-every | --receivers | --min-rate | --ttl)
            # seconds, an octal mode, a CIDR, a size or a rate: nothing to complete
            return
            ;;
    esac

    $split && return

    if [[ $cur == --* ]]; then
        local longopts='--listen --keep-listening --numeric --verbose --help
            --help-all --version --chunk-size --read-size --write-size --sndbuf --rcvbuf
            --timeout --exit-on-peer-eof --no-exit-on-peer-eof --recv-only
            --send-only --report --transport --dgram-size --no-dgram-eof
            --checksum --seq --reliable --receivers --min-rate --ttl --mcast-if --verify --copy --bench --bench-time
            --bench-transports --bench-sizes --allow --deny --unix-mode
            --progress --interval --size --parallel --rate-limit --rcvlowat --congestion
            --resume --retry --retry-wait --replay-buffer --sync --sync-every --no-sync
            --image --sparse --no-sparse --no-verify --chain'
        COMPREPLY=($(compgen -W "$longopts" -- "$cur"))
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '-l -k -4 -6 -n -v -h -V -B -O -I -w -N -q -d
            -u -U -P' -- "$cur"))
        return
    fi

    # Operands: with -U (or a unix transport) a socket path, else a host, then a port.
    local i unix=
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --transport=unix*) unix=1 ;;
            --transport) [[ ${words[i + 1]-} == unix* ]] && unix=1 ;;
            --*) ;;
            -*U*) unix=1 ;;
        esac
    done
    if [[ $unix ]]; then
        _filedir
        return
    fi
    _known_hosts_real -- "$cur"
} &&
    complete -F _fastcat fastcat

# ex: filetype=sh
