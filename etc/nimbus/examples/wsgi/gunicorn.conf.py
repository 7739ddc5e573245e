# gunicorn settings for Nimbus's HTTP services (gunicorn reads this file
# as Python). One master per service, each with its own --bind:
#
#   gunicorn -c /etc/nimbus/gunicorn.conf.py --bind 0.0.0.0:8774 \
#       nimbus.wsgi.api:application
#   gunicorn -c /etc/nimbus/gunicorn.conf.py --bind 0.0.0.0:8778 \
#       nimbus.wsgi.placement:application
#   gunicorn -c /etc/nimbus/gunicorn.conf.py --bind 0.0.0.0:6666 \
#       nimbus.wsgi.accelerator:application
#
# Each application reads NIMBUS_CONFIG_FILE, else its own file in
# OS_NIMBUS_CONFIG_DIR (default /etc/nimbus): nimbus.conf for the API,
# placement.conf, accelerator.conf (falling back to nimbus.conf).
# Before starting several workers, sync the databases once
# (nimbus-manage db sync) and set [placement_database] and
# [accelerator_database] sync_on_startup = false.
# The accelerator workers serve HTTP only: nimbus-accelerator-api still
# runs (one per deployment) for the agents' RPC and the binder.
# Command-line flags override what this file sets.

# Worker processes: about 2 per core of the machine.
workers = 4
# Threads per worker: the apps are thread-safe (the built-in server is
# threaded too), and nimbus-api's dashboard holds long event streams.
worker_class = 'gthread'
threads = 8
# Seconds a request may take (a large GET /allocation_candidates).
timeout = 120
graceful_timeout = 30
# No --preload: each worker builds its own app (database pools, RabbitMQ
# connections) after the fork.
preload_app = False
# Access log to stderr with the worker's pid; errors to stderr.
accesslog = '-'
errorlog = '-'
access_log_format = '%(h)s %(p)s "%(r)s" %(s)s %(b)s %(L)ss'


def post_worker_init(worker):
    """Build the app when the worker starts, not on its first request:
    a config error then stops the worker at boot, with the reason in the
    error log."""
    load = getattr(worker.wsgi, 'load', None)
    if load is not None:
        load()
