# The runtime image plus passwordless sudo for its user: what the Docker backends use with
# `sudo: true` (and the default image). Build with docker/build.sh --sudo; see docs/security.md,
# "sudo and credentials", for what the container gets with it.
ARG RUNTIME_IMAGE=execmcp/runtime:latest
FROM ${RUNTIME_IMAGE}

USER root
SHELL ["/bin/sh", "-eu", "-c"]

# sudo from Debian, as the runtime image gets its packages; the sudoers drop-in is checked by
# visudo before the image can exist. NOPASSWD for execmcp only: a uid the workspace-owner policy
# picks is not in /etc/passwd, and sudo refuses it (set `user` to 1000 for sudo then).
RUN export DEBIAN_FRONTEND=noninteractive; \
    if ! command -v sudo >/dev/null 2>&1; then \
      apt-get update -qq; \
      apt-get install -y -qq --no-install-recommends sudo; \
      apt-get clean; \
      rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin; \
    fi; \
    printf '%s\n' 'execmcp ALL=(ALL:ALL) NOPASSWD: ALL' >/etc/sudoers.d/execmcp; \
    chmod 0440 /etc/sudoers.d/execmcp; \
    visudo -cf /etc/sudoers.d/execmcp; \
    visudo -c; \
    rm -rf /tmp/* /root/.cache

LABEL org.opencontainers.image.title="execmcp runtime with sudo" \
      org.opencontainers.image.description="execmcp's runtime image with passwordless sudo for its user"

USER execmcp
