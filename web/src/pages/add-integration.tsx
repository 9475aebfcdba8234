export default function AddIntegrationPage() {
  return (
    <section className="page">
      <h1>AddIntegration</h1>
    </section>
  );
}
