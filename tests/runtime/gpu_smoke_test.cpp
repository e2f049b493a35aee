// placeholder: being written (see the issue in progress)
