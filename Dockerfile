# The console's image: the wheel with its `console` extra, served by gunicorn (README.md,
# Deployment). Not built on the machine this project is developed on (it has no container daemon);
# every command it runs is the one scripts/package_check.sh runs in `make test`.
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN python -m pip install --no-cache-dir build==1.6.1 && python -m build --wheel --outdir /dist .

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    STALWART_VAR_DIR=/var/lib/stalwart \
    STALWART_BIND=0.0.0.0:8000
RUN useradd --system --home-dir /var/lib/stalwart --create-home stalwart
COPY --from=build /dist/ /dist/
RUN pip install --no-cache-dir "$(ls /dist/stalwart-*.whl)[console]" && rm -rf /dist
# Static files are collected at build time (a throw-away key: collectstatic signs nothing).
RUN STALWART_SECRET_KEY=build-only-key-never-used-to-serve-0123456789abcdefghijklmnop \
    stalwart console manage collectstatic --noinput \
    && chown -R stalwart /var/lib/stalwart
USER stalwart
WORKDIR /var/lib/stalwart
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["stalwart", "console", "serve"]
