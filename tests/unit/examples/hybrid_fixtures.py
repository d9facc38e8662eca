"""A small dpkg status file for the hybrid example's unit tests (Debian Policy §5.6.13
descriptions, one package not installed, one stanza without a name)."""

from __future__ import annotations

from pathlib import Path

STATUS = """\
Package: gzip
Status: install ok installed
Priority: required
Section: utils
Installed-Size: 245
Version: 1.12-1
Depends: libc6 (>= 2.34), dpkg (>= 1.15.4) | install-info
Homepage: https://www.gnu.org/software/gzip/
Description: GNU compression utilities
 This package provides the standard GNU file compression utilities, which
 are also the default compression tools for Debian.  They typically operate
 on files with names ending in '.gz', but can also decompress files ending
 in '.Z' created with 'compress'.

Package: xz-utils
Status: install ok installed
Priority: standard
Section: utils
Installed-Size: 1000
Version: 5.4.1-1
Description: XZ-format compression utilities
 XZ is the successor to the Lempel-Ziv/Markov-chain Algorithm
 compression format, which provides memory-hungry but powerful
 compression (often better than bzip2) and fast, easy decompression.
 .
 This package provides the command line tools for working with XZ
 compression, including xz, unxz, xzcat, xzgrep, and so on.

Package: zstd
Status: install ok installed
Section: utils
Installed-Size: 1600
Version: 1.5.4
Description: fast lossless compression algorithm -- CLI tool
 Zstd, short for Zstandard, is a fast lossless compression algorithm, targeting
 real-time compression scenarios at zlib-level compression ratio.

Package: openssh-client
Status: install ok installed
Section: net
Installed-Size: 4000
Version: 1:9.2p1
Description: secure shell (SSH) client, for secure access to remote machines
 This is the portable version of OpenSSH, a free implementation of
 the Secure Shell protocol as specified by the IETF secsh working
 group.
 .
 Ssh (Secure Shell) is a program for logging into a remote machine
 and for executing commands on a remote machine.
 .
  ssh      verbatim line one
  scp      verbatim line two

Package: libexpat1
Status: install ok installed
Section: libs
Installed-Size: 400
Version: 2.5.0
Description: XML parsing C library - runtime library
 This package contains the runtime, shared library of expat, the C
 library for parsing XML.

Package: libexpat1-dev
Status: install ok installed
Section: libdevel
Installed-Size: 900
Version: 2.5.0
Description: XML parsing C library - development kit
 This package contains the header files and the static library.

Package: python3-yaml
Status: install ok installed
Section: python
Installed-Size: 600
Version: 6.0
Description: YAML parser and emitter for Python3
 Python3-yaml is a complete YAML 1.1 parser and emitter for Python3.

Package: postgresql-15
Status: install ok installed
Section: database
Installed-Size: 50000
Version: 15.8
Description: The World's Most Advanced Open Source Relational Database
 PostgreSQL is a fully featured object-relational database management
 system.

Package: ncurses-base
Status: install ok installed
Section: misc
Installed-Size: 400
Version: 6.4
Description: basic terminal type definitions
 The ncurses library routines are a terminal-independent method of
 updating character screens.

Package: removed-thing
Status: deinstall ok config-files
Section: utils
Version: 1.0
Description: a package removed with its configuration kept

Section: utils
Description: a stanza without a Package field
"""
"""Ten stanzas: nine installed packages (sorted: gzip, libexpat1, libexpat1-dev,
ncurses-base, openssh-client, postgresql-15, python3-yaml, xz-utils, zstd)."""

INSTALLED = ["gzip", "libexpat1", "libexpat1-dev", "ncurses-base", "openssh-client",
             "postgresql-15", "python3-yaml", "xz-utils", "zstd"]


def write_status(folder: Path) -> str:
    """Write :data:`STATUS` to ``folder/status``; return its path."""
    path = folder / "status"
    path.write_text(STATUS, encoding="utf-8")
    return str(path)
