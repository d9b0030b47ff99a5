#!/usr/bin/env bash
# Install Gantt as the systemd deployment docs/source/install/index.rst
# describes: a virtualenv under PREFIX/venv with the daemons, the gantt
# system user, its directories, and the units rendered from
# etc/systemd/*.service.in with the paths of this installation.
#
#   sudo tools/install.sh                     # /opt/gantt, PostgreSQL driver
#   tools/install.sh --prefix /tmp/g --sysconfdir /tmp/g/etc \
#       --localstatedir /tmp/g/var --unitdir /tmp/g/units --no-user
#
# Running it again upgrades the installation from --source and renders the
# units again; an existing gantt.conf is never overwritten.
set -euo pipefail

PROG=install.sh
USER_NAME=gantt

usage() {
    cat <<EOF
Usage: $PROG [options]

  --prefix DIR         where the virtualenv goes (DIR/venv) [/opt/gantt]
  --extras LIST        the project's extras, comma-separated, or '' for
                       none (SQLite) [postgresql]; e.g. postgresql,mysql
  --sysconfdir DIR     the configuration goes in DIR/gantt [/etc]
  --localstatedir DIR  logs in DIR/log/gantt, state in DIR/lib/gantt [/var]
  --unitdir DIR        where the systemd units go [/etc/systemd/system]
  --source DIR         the Gantt source tree to install [this script's]
  --python PYTHON      the interpreter the virtualenv is made with [python3]
  --no-user            do not create the '$USER_NAME' user and group
                       (tests, or an unprivileged run)
  -h, --help           this text
EOF
}

die() {
    echo "$PROG: error: $*" >&2
    exit 1
}

say() {
    echo "$PROG: $*"
}

PREFIX=/opt/gantt
EXTRAS=postgresql
SYSCONFDIR=/etc
LOCALSTATEDIR=/var
UNITDIR=/etc/systemd/system
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON=python3
CREATE_USER=1

need_value() {
    if [ $# -lt 2 ] || [[ "$2" == --* ]]; then
        usage >&2
        die "$1 needs a value"
    fi
}

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) need_value "$@"; PREFIX=$2; shift 2 ;;
        --extras) need_value "$@"; EXTRAS=$2; shift 2 ;;
        --sysconfdir) need_value "$@"; SYSCONFDIR=$2; shift 2 ;;
        --localstatedir) need_value "$@"; LOCALSTATEDIR=$2; shift 2 ;;
        --unitdir) need_value "$@"; UNITDIR=$2; shift 2 ;;
        --source) need_value "$@"; SOURCE=$2; shift 2 ;;
        --python) need_value "$@"; PYTHON=$2; shift 2 ;;
        --no-user) CREATE_USER=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done

# Paths end up in unit files: absolute, and nothing systemd or sed would
# read differently.
for name in PREFIX SYSCONFDIR LOCALSTATEDIR UNITDIR SOURCE; do
    value=${!name}
    case "$value" in
        /*) ;;
        *) die "--${name,,} must be an absolute path, not '$value'" ;;
    esac
    case "$value" in
        *[[:space:]\|\%\&\$\\\"\']*)
            die "--${name,,} '$value' holds a space or one of |%\$\\\"': not usable in a unit file" ;;
    esac
done
case "$EXTRAS" in
    *[!a-z0-9,_-]*) die "--extras '$EXTRAS' is not a comma-separated list of extras (e.g. postgresql,mysql)" ;;
esac

[ -f "$SOURCE/pyproject.toml" ] && [ -d "$SOURCE/etc/systemd" ] \
    || die "--source $SOURCE is not a Gantt source tree (no pyproject.toml or etc/systemd)"

VENV=$PREFIX/venv
BINDIR=$VENV/bin
CONFDIR=$SYSCONFDIR/gantt
LOGDIR=$LOCALSTATEDIR/log/gantt
STATEDIR=$LOCALSTATEDIR/lib/gantt

# -- the interpreter ------------------------------------------------------

command -v "$PYTHON" >/dev/null \
    || die "$PYTHON not found; on Debian: apt-get install python3 python3-venv"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "Gantt needs Python 3.11 or newer; $PYTHON is $("$PYTHON" -V 2>&1)"
# Debian's python3 has the venv module but not ensurepip, which venv
# needs to put pip in the virtualenv.
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null \
    || die "$PYTHON cannot make a virtualenv with pip (no venv/ensurepip module); on Debian: apt-get install python3-venv"

# -- the user ---------------------------------------------------------------

IS_ROOT=0
[ "$(id -u)" -eq 0 ] && IS_ROOT=1

if [ "$CREATE_USER" = 1 ]; then
    [ "$IS_ROOT" = 1 ] \
        || die "creating the '$USER_NAME' user needs root: run with sudo, or pass --no-user"
    if ! getent group "$USER_NAME" >/dev/null; then
        say "creating the system group $USER_NAME"
        groupadd --system "$USER_NAME"
    fi
    if ! getent passwd "$USER_NAME" >/dev/null; then
        say "creating the system user $USER_NAME"
        useradd --system --gid "$USER_NAME" --home-dir "$STATEDIR" \
            --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
    fi
fi

# Ownership is set when root and the user exists (with --no-user, a user
# made some other way); otherwise the directories stay the caller's.
OWN=0
if [ "$IS_ROOT" = 1 ] && getent passwd "$USER_NAME" >/dev/null; then
    OWN=1
elif [ "$IS_ROOT" = 1 ]; then
    say "warning: no '$USER_NAME' user: $CONFDIR, $LOGDIR and $STATEDIR stay root's"
fi

# -- the virtualenv -----------------------------------------------------------

mkdir -p "$PREFIX"
if [ -x "$BINDIR/python" ] && "$BINDIR/python" -c 'import pip' 2>/dev/null; then
    say "using the virtualenv $VENV"
else
    say "creating the virtualenv $VENV"
    "$PYTHON" -m venv --clear "$VENV" \
        || die "$PYTHON -m venv $VENV failed; on Debian: apt-get install python3-venv"
fi

# Built from a copy of the source, so that the checkout gets no build/ or
# egg-info, and so that the copy can say which commit it was
# (scheduler/COMMIT, read by scheduler.version).
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
tar -C "$SOURCE" -cf - --exclude=.git --exclude=.tox --exclude=.venv \
    --exclude='*.egg-info' --exclude=build --exclude=dist \
    --exclude=__pycache__ --exclude=.pytest_cache . | tar -C "$BUILD" -xf -
if [ ! -f "$BUILD/scheduler/COMMIT" ] && command -v git >/dev/null \
        && commit=$(git -C "$SOURCE" rev-parse HEAD 2>/dev/null); then
    echo "$commit" > "$BUILD/scheduler/COMMIT"
fi

target=$BUILD
[ -n "$EXTRAS" ] && target="$BUILD[$EXTRAS]"
say "installing gantt${EXTRAS:+[$EXTRAS]} from $SOURCE into $VENV"
"$BINDIR/pip" install --quiet --disable-pip-version-check "$target" \
    || die "pip could not install $SOURCE into $VENV (its output is above)"
for binary in gantt-scheduler gantt-conductor gantt-compute gantt-manage \
        gantt-status; do
    [ -x "$BINDIR/$binary" ] || die "$BINDIR/$binary is missing after pip install"
done

# -- directories and configuration -------------------------------------------

install -d -m 0755 "$SYSCONFDIR"
install -d -m 0750 "$CONFDIR" "$LOGDIR" "$STATEDIR"
if [ "$OWN" = 1 ]; then
    chown "root:$USER_NAME" "$CONFDIR"
    chown "$USER_NAME:$USER_NAME" "$LOGDIR" "$STATEDIR"
fi

if [ -e "$CONFDIR/gantt.conf" ]; then
    say "keeping $CONFDIR/gantt.conf"
else
    say "writing a starting $CONFDIR/gantt.conf: edit it before starting"
    (umask 0027 && cat > "$CONFDIR/gantt.conf" <<EOF
# Gantt's configuration (nova.conf's groups and option names). Every
# option, commented: tox -e genconfig (etc/gantt/gantt.conf.sample).
[DEFAULT]
transport_url = rabbit://gantt:SECRET@rabbit.example.org:5672/
# The name this machine's services register under.
#host = sched-1
# Logs go to the journal; or to files in $LOGDIR:
#log_dir = $LOGDIR

[database]
connection = postgresql+psycopg2://gantt:SECRET@db.example.org/gantt
# or, on one machine: sqlite:///$STATEDIR/gantt.sqlite

[oslo_reports]
# Guru Meditation Reports (SIGUSR2) as files rather than in the journal:
#log_dir = $LOGDIR
EOF
    )
    [ "$OWN" = 1 ] && chown "root:$USER_NAME" "$CONFDIR/gantt.conf"
fi

# -- the units ----------------------------------------------------------------

install -d -m 0755 "$UNITDIR"
for template in "$SOURCE"/etc/systemd/*.service.in; do
    unit=$(basename "$template" .in)
    sed -e "s|@BINDIR@|$BINDIR|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" \
        -e "s|@LOGDIR@|$LOGDIR|g" -e "s|@STATEDIR@|$STATEDIR|g" \
        "$template" > "$UNITDIR/$unit.tmp"
    if grep -q '@[A-Z]*@' "$UNITDIR/$unit.tmp"; then
        rm -f "$UNITDIR/$unit.tmp"
        die "$template holds a placeholder this script does not know"
    fi
    chmod 0644 "$UNITDIR/$unit.tmp"
    mv "$UNITDIR/$unit.tmp" "$UNITDIR/$unit"
    say "wrote $UNITDIR/$unit"
done

if [ "$IS_ROOT" = 1 ] && [ -d /run/systemd/system ] \
        && [ "$UNITDIR" = /etc/systemd/system ]; then
    systemctl daemon-reload
fi

say "installed $("$BINDIR/python" -c 'import importlib.metadata as m; print(m.version("gantt"))') in $VENV"
say "next: edit $CONFDIR/gantt.conf, run $BINDIR/gantt-manage --config-file $CONFDIR/gantt.conf db sync, then systemctl enable --now gantt-scheduler gantt-conductor"
