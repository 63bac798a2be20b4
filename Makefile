# make install PREFIX=DIR: builds weft (release) and installs its MPI and OpenSHMEM libraries,
# headers, wrappers, pkg-config files and modulefile under DIR (see `weft install --help`).
PREFIX ?= /usr/local
CARGO ?= cargo
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)

.PHONY: all install

all:
	$(CARGO) build --release -p weft-cli -p weft-mpi -p weft-shmem

install: all
	$(TARGET_DIR)/release/weft install --prefix "$(PREFIX)"
