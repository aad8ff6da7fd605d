"""The okgin-web page (package data: index.html, app.js, style.css), served from this folder."""
