# The kro controller image: the `kro` binary built from this repository by
# `cargo build --release --locked -p kro`, on a small runtime image that runs as a non-root
# user. The entrypoint is the binary; the default command runs the controllers, and a
# Deployment's `args` replace it (`controller --metrics-bind-address=:8078 ...`).
#
#   docker build -t kro:dev .
#   docker run --rm kro:dev controller --help
#
# crates/kro/tests/image.rs holds this file to what can be checked without a container
# runtime: the build command, the path copied, the user, and that the command line parses.

FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kro

# glibc and libgcc (the binary links them), CA certificates, no shell, user 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/kro /usr/local/bin/kro
USER 65532:65532
# Metrics, and the health probes.
EXPOSE 8078 8079
ENTRYPOINT ["/usr/local/bin/kro"]
CMD ["controller"]
