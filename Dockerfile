# One image with both binaries; compose runs it as the API and as workers.
FROM rust:1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libgdal-dev libclang-dev pkg-config && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --bins && cp target/release/catalog-api target/release/catalog-worker /usr/local/bin/

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libgdal32 gdal-bin ca-certificates fonts-dejavu-core && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/catalog-api /usr/local/bin/catalog-worker /usr/local/bin/
ENV BIND_ADDR=0.0.0.0:8080
EXPOSE 8080
CMD ["catalog-api"]
