FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir -e . && useradd --create-home kindmem
USER kindmem
ENV KINDMEM_DATA_DIR=/tmp/kindmem
EXPOSE 8000
CMD ["gunicorn", "-c", "python:config.gunicorn_conf", "config.asgi:application", "--bind", "0.0.0.0:8000", "--workers", "4"]
